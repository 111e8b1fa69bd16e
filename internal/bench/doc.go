// Package bench measures the whole appliance: fixed-rate phases fed over
// real SSE by the replay server (freshness, throughput, CPU and its split
// by stage from a CPU profile per phase, memory, and that every event
// reaches silver), the stages alone (ingest, bronze draining a backlog,
// silver reading it), and the step-up search for the fastest sustained
// rate; it writes benchmarks/results.md, .json and freshness.svg. Each
// phase opens internal/appliance in this process (openAppliance says with
// what); package main fills Phases (command.go) from its flags, and
// Phases.Check refuses what no run could use. Every figure comes from the broker, the
// tables on disk or the kernel, not from the pipeline's own counters.
//
// The history benchmark (history*.go) measures the binary itself as child
// processes: lakes of days of history built by its demo, the appliance
// restarted on them (readiness, refreshes, memory from /proc), questions
// through its query checked against the package's own reading of the
// tables and the broker, its verify, and the disk; it writes
// benchmarks/history.md, .json and .svg. Package main fills
// HistoryCommand (history_command.go) from its flags and supplies the
// launcher.
//
// The soak (soak*.go, `bench --soak`) is the long-running benchmark: it
// runs the appliance as a child process, exactly as `run` with its
// defaults, feeds it a live-like stream at a varying rate for a given
// time, and measures its footprint from outside: the kernel's /proc of the child (RSS, anonymous RSS, CPU, bytes
// written), its /status (Go heap, goroutines, broker counts), and the
// warehouse's metadata files through table.Observer (snapshots, live data
// files, metadata size, silver freshness), never opening the catalog or the
// broker while the child holds them. It ends like Prove: drain, stop,
// verify (verify.RunDir) against the replay's counts.
//
// Nothing here is durable: each phase runs in a temporary directory, and a
// history run in a work directory removed after a run that passed, unless
// it is told to keep its lakes (a kept lake is reused only once its build
// record, written last, says it was built and settled with the same
// parameters).
package bench
