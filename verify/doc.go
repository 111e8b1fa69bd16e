// Package verify is the appliance's integrity checker and its kill test.
//
// Verify counts every layer against the broker, the source of truth: the
// topic's end offsets per partition and the dead-letter topic, then bronze
// with a fresh, uncached table read (every (partition, offset) once, gaps and
// duplicates listed), then silver (every expected event id once, no late
// event). It owns no data and writes nothing; like `bbolt check`, it is both
// a library call and a CLI verb.
//
// Prove is the kill test as a scenario a user can run: it drives the real
// appliance, as a child process, over real SSE from a replay server, kills it
// mid-backlog several times, then verifies. Every expectation is computed from
// the scenario itself; a kill that lands where it proves nothing is reported
// as inconclusive, never as a pass.
//
// Soak is the long-running benchmark: it runs the appliance as a child
// process, exactly as `run` with its defaults, feeds it a live-like stream
// at a varying rate for a given time, and measures its footprint from
// outside: the kernel's /proc of the child (RSS, anonymous RSS, CPU, bytes
// written), its /status (Go heap, goroutines, broker counts), and the
// warehouse's metadata files through table.Observer (snapshots, live data
// files, metadata size, silver freshness), never opening the catalog or the
// broker while the child holds them. It ends like Prove: drain, stop,
// verify against the replay's counts.
package verify
