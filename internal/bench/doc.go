// Package bench measures the whole appliance: fixed-rate phases fed over
// real SSE by the replay server (freshness, throughput, CPU and its split
// by stage from a CPU profile per phase, memory, and that every event
// reaches silver), the stages alone (ingest, bronze draining a backlog,
// silver reading it), and the step-up search for the fastest sustained
// rate; it writes
// benchmarks/results.md, .json and freshness.svg. Package main supplies
// the appliance (Start) and the flags. Every figure comes from the broker,
// the tables on disk or the kernel, not from the pipeline's own counters.
// Nothing here is durable: each phase runs in a temporary directory.
package bench
