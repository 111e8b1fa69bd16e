// Package lakeio connects the stream engine to the lake's tables for the
// queries that read a table instead of the broker (silver reads bronze,
// sessions reads silver). It owns two adapters:
//
//   - Source: a table's committed append snapshots, in commit order, as a
//     stream.Source whose offset is the id of the last consumed snapshot;
//   - Sink: a stream.Sink that commits one table snapshot per batch through
//     table.Lake.CommitBatch, with per-batch summary properties supplied by
//     the query (for silver: its watermark, state version and the batch's
//     late, duplicate and unparseable counts).
//
// Progress rows go to ops.stream_progress through stream.TableProgress,
// which takes the counters from the processors' stream.StatsReporter.
//
// Nothing here keeps state of its own (the rows of an append this process
// just committed may come from the Lake's memory, table.Lake.TakeAppended,
// which holds nothing the table does not): what survives a crash is what the
// table commits (one snapshot per batch, with the query's marker) and the
// stream checkpoint. A Source offset names a snapshot, so the source can
// serve a batch again only while that snapshot is retained: snapshot expiry
// on an upstream table must keep every snapshot a downstream query has not
// consumed yet (Read and Plan return stream.ErrSourceBehind otherwise).
package lakeio
