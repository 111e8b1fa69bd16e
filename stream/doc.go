// Package stream is the appliance's micro-batch engine and its queries. It
// owns, per query, a checkpoint directory (the query id, one append-only log
// of offset and commit entries, and versioned state), the runner that turns a Source's offsets
// into batches committed exactly once to a Sink, and the per-batch progress
// kept in ops.stream_progress. The bronze query (broker topic recentchange to
// the Iceberg bronze table) is the first query built on it.
//
// The protocol is Spark Structured Streaming's, made explicit:
//
//  1. before batch N runs, its offset entry (its range) is appended to the
//     checkpoint's log and the log fsynced;
//  2. the sink commits the batch's output in one table snapshot carrying a
//     marker (query name, query id, batch id, end offsets) and skips the
//     commit when the table already holds batch N or later for the query;
//  3. for stateful queries, state/N is saved durably;
//  4. only after the sink's commit returns is N's commit entry appended to
//     the log (and fsynced).
//
// What survives a crash: everything durably written before the crash. On
// restart, a batch that has an offset entry but no commit entry is re-run
// with the same id and the same range, so the sink either commits it once or
// finds its marker and skips it. A lost checkpoint is handled by an explicit
// setting (OnCheckpointLoss): by default the position is rebuilt from the
// table's marker, so exactly-once survives; StartFresh behaves as Spark does
// (a new query id re-reads from the earliest offset, producing duplicates).
// Either way a query-id change is logged at error level and counted in the
// progress rows.
//
// Storage that is full or unreachable (a transient error, see package
// internal/transient) pauses a query instead of stopping it: Run waits with
// backoff and recovers from the checkpoint again, the same path as a
// restart, so the same guarantees hold; Paused reports the pause meanwhile.
//
// Silver and sessions are event-time queries: EventTime drives them
// (each batch's watermark planned from the state before it and fixed in its
// offset entry, state versions loaded, dropped after a failed fold and
// encoded, the batch's counters kept for its progress row and snapshot
// summary), and each supplies its EventFold: how its state is rebuilt,
// folded and encoded.
//
// State belongs to the runner: the checkpoint is the StateStore of a
// stateful query (state/<N>), and the runner hands it to the processor's
// LoadState before planning a batch (its watermark comes from the state
// before it) and before processing it; the processor reads from it only
// the versions it does not hold (a delta chain back to a full snapshot
// after a restart), and the runner writes the version each batch produces.
//
// The sink's marker is keyed by the query name (Batch.Query), not by the
// run's query id, so it can be found after a checkpoint loss; batch ids stay
// monotonic per name across query ids. While a backlog drains, the next
// batch's input is read while the current batch commits; its offset entry is
// still written only after the current commit entry, with exactly the range
// that was read.
package stream
