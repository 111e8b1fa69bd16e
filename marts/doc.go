// Package marts owns the gold layer of the lakehouse and its upkeep: four gold
// marts built by DuckDB from SQL files embedded in the binary (models with a
// header, as a user's are: gold.go), the user's own models (SQL files of a
// directory: model.go, compiled by model_compile.go, planned by unit in
// model_plan.go, built by model_build.go after the four, checked by
// model_checks.go, tried without writing by TryModel), five asset checks
// that reconcile the layers (and see a stream that has stopped), the
// in-process scheduler that refreshes them and runs table maintenance
// (compaction, snapshot expiry), and the ad-hoc Query entry point behind
// `lakehouse query`.
//
// Marts are pure functions of committed snapshots: each Refresh plans the
// live data files of silver (and bronze) once, reads them with DuckDB
// (read_parquet with a field-id schema map, never union_by_name, no
// extensions downloaded), rebuilds the marts in an in-memory DuckDB and
// writes each one back with a full Iceberg overwrite, so any engine can read
// gold. A Refresh rebuilds only the UTC days (and hours) whose silver files
// changed since the gold mart was written and keeps the other days as they
// were (scope.go). The checks then read gold back from the lake and compare
// it with the same pinned silver files, so a check sees what a reader would
// see. What the marts and the checks know between refreshes (what each mart
// was built from, how far the offsets and uniqueness checks have counted)
// is kept in the lake beside what it describes (state.go), never only in
// memory: the first Refresh after a restart does what changed since the
// last one before it, however much history the lake holds. A full pass over
// history is the explicit Rebuild.
// A Refresh's (and a Check's) DuckDB work stays on one OS thread, so its
// allocator reuses one arena instead of keeping a query's peak per thread,
// and no statement groups more than Config.ChunkRows edits where a mart or
// check can be split (chunks.go); lake calls run on goroutines of their
// own (offthread.go).
//
// Run history and check results are appended to two Iceberg tables owned by
// this package, ops.runs and ops.asset_checks (one CommitBatch per Refresh or
// maintenance run, marker query "marts").
//
// A model's table records what it was built from in the commit that writes
// it (propModel), like a built-in mart; a crash leaves each model as it was
// or as rebuilt.
//
// What survives a crash: every gold overwrite and every ops commit that
// returned, each with its record of what it was built from or what the
// checks established (in the same commit). A crash in the middle of a
// Refresh can leave some marts rebuilt and others from the previous
// refresh; nothing is ever half written (each overwrite is one Iceberg
// snapshot), and the next Refresh rebuilds each mart's units that changed
// since that mart was written.
// Maintenance commits are atomic the same way: a compaction either replaces
// its files in one snapshot or changes nothing, and the streams' exactly-once
// markers live in table properties that compaction and expiry carry over.
// Snapshot expiry never removes a snapshot that Config.Protect reports as not
// yet consumed by a downstream stream.
package marts
