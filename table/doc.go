// Package table owns the lakehouse's Iceberg tables (through
// github.com/apache/iceberg-go): the embedded bbolt catalog (catalog.db, see
// package table/catalog), the warehouse on local disk or S3, the project's
// table schemas, the exactly-once batch commit with its markers, incremental
// snapshot reads, data-file listing for DuckDB, and maintenance.
//
// # What survives a crash
//
// A CommitBatch that returned without error survives a crash, and so does the
// query's marker (last batch id and offsets) that it set. Local files are
// fsynced on close and their directories before the catalog swaps the table
// pointer (iceberg-go's own local IO never fsyncs; Open replaces it process
// wide); the swap itself is one fsynced bbolt transaction. A crash anywhere
// before the swap leaves the previous table version intact plus unreferenced
// files, which DeleteOrphanFiles removes later; nothing is locked or claimed,
// so the next commit proceeds at once. A crash after the swap but before
// CommitBatch returns leaves the batch committed: its re-run finds the marker
// and commits nothing ("already committed"). S3 writes are durable when the
// PUT returns.
//
// # A data directory that moves
//
// Iceberg metadata names every file by absolute path, under the warehouse
// the table was created in (the catalog reads that recorded root from its
// tables' pointers, catalog.Catalog.Root). A local Lake opened on a copy or
// a moved data directory resolves every such path under the warehouse it
// was opened with and refuses every path outside it (rootedFS,
// ErrOutsideWarehouse), so a copy never reads or writes the original's
// files; the metadata keeps naming the recorded root, and DataFiles hands
// out resolved paths. An S3 warehouse must be the one the tables name.
//
// # Exactly-once commit
//
// CommitBatch(ident, Batch{Query, RunID, ID, Offsets, Records, Props})
// reads the catalog's current pointer (never a cached one), skips the batch
// if the query's marker says a batch id >= ID is committed, writes the data
// files, then commits one append snapshot pinned with
// AssertRefSnapshotID("main"). The snapshot summary carries
// lakehouse.query-id, lakehouse.batch-id, lakehouse.offsets and the batch's
// Props (every key prefixed "lakehouse." so a reserved Iceberg key can never
// be overwritten); the same transaction sets the table property
// lakehouse.marker.<query> = {"batch", "offsets", "run_id", "props"}. The
// property, unlike the summary, survives snapshot expiry and compaction. A
// batch without rows commits the marker alone, with no snapshot, so a query
// that mostly emits nothing does not grow the table's history.
// iceberg-go's own retry would replay a commit blindly (two snapshots with
// one batch id), so it is off (commit.retry.num-retries=0): after a lost race
// CommitBatch reloads, re-checks the marker, and either stops (a zombie or
// replay got there first; its own files are deleted) or retries with the same
// files. Within one Lake, commits to a table (stream batches, compaction,
// expiry) take turns on a per-table lock, so they never race each other and
// a maintenance commit is not starved by a busy stream.
//
// # Tables
//
// bronze.recentchange, partitioned by day(broker_ts):
// broker_partition int32, broker_offset int64, broker_ts timestamptz, key
// string (nullable), value string (the raw event JSON, untouched; a string
// rather than binary so DuckDB's JSON functions read it directly), ingest_ts
// timestamptz. (broker_partition and broker_offset were named partition and
// offset before; both are SQL reserved words. EnsureTables renames them in
// a lake made by an earlier version, keeping field ids 1 and 2.)
//
// silver.edits, partitioned by day(event_time): event_id, event_time,
// intake_time, wiki, type, namespace, title, user, bot, minor (nullable),
// length_old (nullable), length_new, byte_delta, rev_old (nullable), rev_new,
// comment (nullable), server_name, src_partition, src_offset (lineage to
// bronze), processed_time.
//
// silver.editor_sessions, partitioned by day(session_start): session_id,
// wiki, user, bot, session_start, session_end, edits, pages, bytes_added,
// bytes_removed, processed_time.
//
// ops.stream_progress, unpartitioned: query, query_id, batch_id, started,
// duration_ms, commit_ms, rows_in, rows_out, rows_dropped_by_watermark,
// duplicates_dropped, unparseable, end_offsets, lag, watermark (nullable),
// query_id_changes.
//
// Why day partitions: the three event tables grow without bound and are
// read by time range (marts, verification of one day, retention), so a day
// partition lets file planning and retention work on whole days, and
// compaction never mixes days, so rewriting a closed day does not conflict
// with appends to the current one. The cost is small: a micro-batch that
// straddles midnight writes two files instead of one. Finer partitions (hour)
// would multiply small files at about 35 events/s. ops.stream_progress is a
// few rows per batch and is read whole, so it stays unpartitioned.
//
// The exported Arrow schemas (BronzeSchema, ...) carry the Iceberg field ids;
// field ids are 1..n in column order. DataFiles hands out the table's
// current schema with the files, so a reader maps columns by id, not by
// name (marts renders it as a DuckDB read_parquet schema map), and Scan and
// ReadAppended read through iceberg-go by id in the current schema: files
// written before a rename read under the new name.
//
// TakeAppended is ReadAppended for the one query in the process that
// follows a table's appends (silver follows bronze, sessions silver;
// FollowAppends declares it): a Lake keeps the rows of its own latest
// committed appends to a followed table in memory
// (Config.RecentAppendBytes, a minute at most) and hands them over instead
// of reading back the Parquet it just wrote. Nothing of it survives a
// restart, and nothing needs to: what is not kept is read from the files.
//
// # Schema evolution
//
// EnsureTables upgrades the tables of an existing lake in place: a column
// whose field id the project's schema names differently is renamed (one
// commit per table, with the property updates; none when nothing differs).
// Nothing else is evolved: CommitBatch refuses records whose columns do not
// match the table's current schema (ErrSchemaMismatch), so a writer built
// for the new names cannot land rows in a lake EnsureTables has not
// upgraded.
//
// # Observing from outside
//
// Observer reads a local warehouse's tables from their metadata files alone
// (the newest metadata.json that parses), without opening catalog.db, so a
// harness can watch the lake of a running appliance: snapshots, live data
// files, metadata size, and the rows of an append snapshot.
//
// # Defaults
//
// DefaultTableProps turns on manifest merging
// (commit.manifest-merge.enabled, at 16 manifests), deletion of superseded metadata files
// (write.metadata.delete-after-commit.enabled with
// write.metadata.previous-versions-max=5), zstd Parquet at level 1 (bronze
// drains 7 to 17 % faster than at the default level 3 for files 2 % larger;
// a closed day's merge, whose files are final, writes level 7: finalLevel),
// and disables
// iceberg-go's blind commit retry. Snapshot expiry is not automatic: commit
// cost grows with the number of retained snapshots (iceberg-go clones every
// snapshot and its summary on each transaction), so callers expire by count
// (Stats tells when), protecting every snapshot a downstream query has not
// consumed. Compact merges small files by a size-tiered CompactPolicy, so the
// rows rewritten stay proportional to the data, not to the commits.
//
// # Working around iceberg-go
//
// A metadata value built by iceberg-go's MetadataBuilder (what a commit
// returns) keeps the versions it was built from reachable: with it cached,
// the process held every version of the table, and its live heap grew with
// the square of the snapshot count (255 MiB after 400 commits of one table;
// dropping that one cache entry freed them). The catalog therefore hands
// back the built metadata for at most 16 commits in a row and then the
// metadata parsed from the file it just wrote, which cuts the chain
// (TestCommitHeapFlat: 5.4 MiB flat); a parse per commit was 6 % of the
// appliance's CPU at 35 ev/s.
//
// iceberg-go writes and reads every manifest and manifest list through
// github.com/twmb/avro, used as published: it allocates a new flate writer
// (about 800 KB) per block written and a flate reader per block read, and
// parses every Avro schema anew, about half the bytes a bronze commit
// allocates. Neither library lets a caller pass a codec or a schema cache,
// so the appliance pays that cost rather than carry a patched copy of the
// module (BenchmarkCommitLatency measures it).
//
// iceberg-go writes every manifest and manifest list with the deflate
// codec through Go's compress/flate, whose Close ends each Avro block's
// stream with an empty final stored block; some inflaters refuse that
// (icebird's fails on every manifest). The lake's file IO (durableFS on
// local disk, in every lake of the process; the S3 file IO through the
// catalog's FileIO hook) rewrites that ending of each .avro file it writes
// into an empty final fixed-Huffman block, keeps the file's length (the
// manifest list records it) by giving the bytes saved back as whitespace in
// the header's avro.schema JSON, and writes anything it does not recognise
// as it came (avroframe.go; TestManifestsEndTheirDeflateStreamsPlainly,
// TestManifestsPlainOnEveryBackend). Reading is unchanged, so manifests
// written before still read. Not covered: a lake whose tables are in a REST
// catalog and whose warehouse is on S3 (iceberg-go opens that file IO by
// scheme, and its S3 factory cannot be wrapped).
//
// iceberg-go's metadata accessors (SnapshotByID, Snapshots) clone every
// snapshot they return, summary map included, so walking main's history
// costs an allocation per snapshot; downstream queries ask AppendsAfter on
// every poll and batch. The Lake walks each table's history once per
// metadata file and keeps it (TestAppendsAfterWalksMetadataOnce: 7 KB
// instead of 127 KB per call over 30 snapshots).
//
// arrow-go's Parquet zstd codec pools encoders with zstd's default 8 MiB
// window; one that compressed a page above 128 KiB (a burst, a compaction)
// keeps an 8 MiB history, and the commits reusing it every second keep it
// alive. This package registers a codec with a 1 MiB window instead
// (zstd.go, through arrow-go's compress.RegisterCodec): the same bytes for
// a default-sized page, a quarter of the memory (TestZstdWindowBounded).
//
// iceberg-go's ExecuteCompactionGroup reads a group through its scan
// pipeline (a goroutine per column, batches queued between reader,
// projection and writer): with its defaults it held most of a group decoded
// (142 MiB live for eight files of 12,000 rows of 2 KB), and even bounded
// (one reader, 1,024-row batches, two queued, 8,192-row row groups) 62 MiB,
// which the collector's headroom doubled: one merge of a higher bronze tier
// was the appliance's peak RSS, far above its level between merges.
// Compact merges with its
// own streaming reader instead (merge.go: one file after the other on one
// goroutine, 256-row batches, one queued for iceberg-go's writer, row
// groups of 2,048 rows, pages of 512 KiB) and halves GOGC while a merge
// runs (gcpace.go; GOGC is process wide, and the last merge to end restores
// the value the first found): the live heap stays within
// TestCompactMemoryBounded's bound, and BenchmarkCompactTierFootprint
// shows the resident memory a merge adds cut to about a third.
package table
