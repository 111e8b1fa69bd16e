// Package silver is the silver streaming query: it reads committed bronze
// snapshots in commit order, parses each raw event, keeps edit and new
// events, and lands each unique on-time event exactly once in silver.edits.
//
// Per batch, in this order (Spark's dropDuplicatesWithinWatermark): rows
// whose event time (the edit's `timestamp`) is below the batch's watermark
// are dropped as late; surviving rows whose meta.id is in the dedup state are
// dropped as duplicates; new ids are emitted and kept in the state until
// event_time + WatermarkDelay falls below the watermark, then evicted, so the
// state is bounded by the watermark. The watermark is the newest event time
// seen in earlier batches minus WatermarkDelay; it never goes back. An id
// therefore stays for about 2 x WatermarkDelay of event time: at r new
// events per second the state holds 2 x delay x r ids (12 million at
// 10,000/s with the default 10 minutes), about 28 bytes each in memory plus
// 20 bytes each while a full state snapshot is encoded.
//
// State versions are saved as deltas (the ids a batch added) with a full
// snapshot every MaxDeltaChain versions; rebuilding version N after a
// restart reads the last full snapshot and the deltas after it.
//
// What survives a crash: the watermark batch N uses is fixed in N's offset
// entry before N runs; the dedup state after batch N is saved durably as
// state/N (a full snapshot or a delta over N-1) before N's table commit; the
// table commit carries N's marker and, in its snapshot summary, the
// watermark, the state version and the late/duplicate/unparseable counts. A
// re-run of N loads state N-1 and the recorded watermark, and so produces
// the same rows, which the table's marker then commits at most once.
//
// Rows that cannot be parsed are counted, logged and reported in the
// batch's summary and progress row; they stay in bronze. Bronze only holds
// events that passed the ingest contract, and the contract refuses whatever
// silver cannot store (both take their rules from internal/recentchange), so
// this happens only to rows an earlier contract let in. Among them are edits
// whose times break the event-time rule (recentchange.CheckTimes against
// the row's broker_ts, Config.MaxEventAhead): they are counted unparseable
// and never move the watermark.
//
// If the checkpoint directory is lost, the stream engine continues from the
// table's marker (stream.RebuildFromTable) and silver rebuilds the missing
// state from silver.edits: the watermark its last committed batch recorded,
// and the ids of the rows whose event_time + WatermarkDelay is not below it
// (a filtered scan of the recent day partitions). This is logged at error
// level. A Processor built without NewQuery has no table to rebuild from
// and starts empty instead.
package silver
