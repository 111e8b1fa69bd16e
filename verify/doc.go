// Package verify is the appliance's integrity checker and its kill test.
//
// Verify counts every layer against the broker, the source of truth: the
// topic's end offsets per partition and the dead-letter topic, then bronze
// with a fresh, uncached table read (every (partition, offset) once, gaps and
// duplicates listed), then silver against bronze at the level of event ids.
// It parses every bronze value with silver's own parser
// (recentchange.ParseEdit) and expects in silver every edit/new id of which
// some occurrence is surely on time: its event time at or after the newest
// event time of the bronze batches before its own (ordered by ingest_ts)
// minus the watermark delay, which bounds from above the watermark silver
// applied to it. Missing ids (a lost row) and extra ids (silver holding what
// bronze lacks) fail `silver-complete` and are named. What the pipeline has
// not read yet is pending, not missing: broker offsets above bronze's last
// batch (bronze's batches are contiguous prefixes of each partition) and
// bronze rows after the batch silver's marker names. Pending passes for the
// CLI (NoExpectations) and fails a scenario that drained the pipeline
// (Expect.AllowPending false). Memory does not grow with id strings: offsets
// are bitmaps, ids 64-bit hashes in sorted slices, the tables are read a few
// thousand rows at a time; about 60 MiB of Go heap for a million rows. It
// owns no data and writes nothing; like `bbolt check`, it is both a library
// call and a CLI verb.
//
// Prove is the kill test as a scenario a user can run: it drives the real
// appliance, as a child process, over real SSE from a replay server, kills it
// mid-backlog several times, then verifies. Every expectation is computed from
// the scenario itself; a kill that lands where it proves nothing is reported
// as inconclusive, never as a pass. On Kafka it also reads the topics with
// a franz-go read-committed consumer, a reader independent of the
// appliance's, and checks that the appliance's Log holds the same records
// (kafka-read-committed); with IngestKills it first kills the ingest role
// inside open transactions, so that bronze drains a backlog holding aborted
// ones.
package verify
