package stream

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/table"
)

// Snapshot-summary properties the table sink adds to each batch's snapshot
// (the table prefixes them with "lakehouse.").
const (
	PropStreamQueryID = "stream.query-id" // the run's query id (the checkpoint's)
	PropStreamStart   = "stream.start"    // the batch's start offsets
	PropStreamQuery   = "stream.query"    // the query name
	propQueryIDFull   = "lakehouse.stream.query-id"
)

// TableSink commits batches to one table of a table.Lake with
// Lake.CommitBatch. The table marker is keyed by the query name (Batch.Query),
// not by the run's query id, so that a lost checkpoint can be rebuilt from
// it; the query id travels in the marker and in the snapshot summary
// (PropStreamQueryID).
type TableSink struct {
	Lake  *table.Lake
	Table string
	// Props, when set, adds summary properties to each batch's snapshot (a
	// stateful processor's stats and state version). It is called after the
	// batch was processed.
	Props func(b Batch) map[string]string
	// TimeColumn, when set, names a timestamp column whose newest value
	// and per-row age at commit Commit reports (SinkResult.Newest,
	// Latency): the freshness of what the table holds.
	TimeColumn string
}

// Commit implements Sink.
func (s *TableSink) Commit(ctx context.Context, b Batch, rows []arrow.RecordBatch) (SinkResult, error) {
	props := map[string]string{}
	if s.Props != nil {
		maps.Copy(props, s.Props(b))
	}
	props[PropStreamQueryID] = b.QueryID
	props[PropStreamStart] = string(b.Start)
	props[PropStreamQuery] = b.Query
	res, err := s.Lake.CommitBatch(ctx, s.Table, table.Batch{
		Query:   b.Query,
		RunID:   b.QueryID,
		ID:      b.ID,
		Offsets: string(b.End),
		Records: rows,
		Props:   props,
		Fenced:  !b.Unfenced,
		Follows: string(b.Start),
	})
	if err != nil {
		return SinkResult{}, fmt.Errorf("commit %s batch %d to %s: %w", b.Query, b.ID, s.Table, err)
	}
	out := SinkResult{Committed: res.Committed, SnapshotID: res.SnapshotID, Rows: res.Rows}
	if s.TimeColumn != "" && res.Committed && res.Rows > 0 {
		out.Newest, out.Latency = ages(rows, s.TimeColumn, time.Now())
	}
	return out, nil
}

// ages returns the newest value of the timestamp column name among rows and
// a histogram of each row's age at now (rows without the column, or with
// another type, are skipped).
func ages(rows []arrow.RecordBatch, name string, now time.Time) (time.Time, *Histogram) {
	var newest int64
	var h Histogram
	nowUs := now.UnixMicro()
	eachTime(rows, name, func(us int64) {
		newest = max(newest, us)
		h.Observe(float64(nowUs-us) / 1e6)
	})
	if h.Count() == 0 {
		return time.Time{}, nil
	}
	return time.UnixMicro(newest).UTC(), &h
}

// eachTime calls fn with each non-null value, in microseconds, of the
// column name of rows (none when it is absent or not a microsecond
// timestamp).
func eachTime(rows []arrow.RecordBatch, name string, fn func(us int64)) {
	for _, r := range rows {
		idx := r.Schema().FieldIndices(name)
		if len(idx) != 1 {
			continue
		}
		col, ok := r.Column(idx[0]).(*array.Timestamp)
		if !ok || col.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond {
			continue
		}
		for i := 0; i < col.Len(); i++ {
			if !col.IsNull(i) {
				fn(int64(col.Value(i)))
			}
		}
	}
}

// timesOf appends to dst the values eachTime gives.
func timesOf(rows []arrow.RecordBatch, name string, dst []int64) []int64 {
	eachTime(rows, name, func(us int64) { dst = append(dst, us) })
	return dst
}

// agesAt is the histogram of now minus each time (microseconds), or nil
// for none.
func agesAt(us []int64, now time.Time) *Histogram {
	if len(us) == 0 {
		return nil
	}
	var h Histogram
	nowUs := now.UnixMicro()
	for _, u := range us {
		h.Observe(float64(nowUs-u) / 1e6)
	}
	return &h
}

// LastCommitted implements Sink. The query id comes from the marker; a
// marker written before it carried one is matched with its snapshot's
// summary (empty if that snapshot was expired).
func (s *TableSink) LastCommitted(ctx context.Context, query string) (Marker, bool, error) {
	m, ok, err := s.Lake.LastCommitted(ctx, s.Table, query)
	if err != nil || !ok {
		return Marker{}, ok, err
	}
	out := Marker{Batch: m.Batch, End: Offset(m.Offsets), QueryID: m.RunID}
	if out.QueryID != "" || m.SnapshotID == 0 {
		return out, true, nil
	}
	snaps, err := s.Lake.AppendsAfter(ctx, s.Table, 0)
	if err != nil {
		return Marker{}, false, fmt.Errorf("read snapshots of %s: %w", s.Table, err)
	}
	for _, sn := range snaps {
		if sn.ID == m.SnapshotID {
			out.QueryID = sn.Summary[propQueryIDFull]
		}
	}
	return out, true, nil
}

// TableProgress keeps progress rows in a table (ops.stream_progress) with
// Lake.CommitBatch: one commit per flush, keyed by the query name and the
// last batch id of the rows, so a re-flush after a crash is skipped.
type TableProgress struct {
	Lake   *table.Lake
	Table  string        // table.StreamProgress
	Schema *arrow.Schema // table.StreamProgressSchema
	Alloc  memory.Allocator
}

// NewTableProgress returns a TableProgress on ops.stream_progress.
func NewTableProgress(lake *table.Lake) *TableProgress {
	return &TableProgress{Lake: lake, Table: table.StreamProgress, Schema: table.StreamProgressSchema, Alloc: memory.DefaultAllocator}
}

// WriteProgress implements ProgressSink.
func (t *TableProgress) WriteProgress(ctx context.Context, query string, rows []Progress) error {
	if len(rows) == 0 {
		return nil
	}
	rec, err := progressRecord(t.Alloc, t.Schema, rows)
	if err != nil {
		return err
	}
	defer rec.Release()
	last := rows[len(rows)-1]
	_, err = t.Lake.CommitBatch(ctx, t.Table, table.Batch{
		Query:   query,
		ID:      last.Batch,
		Offsets: string(last.End),
		Records: []arrow.RecordBatch{rec},
		Props:   map[string]string{"stream.first-batch": strconv.FormatInt(rows[0].Batch, 10)},
	})
	if err != nil {
		return fmt.Errorf("write progress of %s: %w", query, err)
	}
	return nil
}

// LastProgress implements ProgressSink.
func (t *TableProgress) LastProgress(ctx context.Context, query string) (int64, bool, error) {
	m, ok, err := t.Lake.LastCommitted(ctx, t.Table, query)
	if err != nil || !ok {
		return 0, ok, err
	}
	return m.Batch, true, nil
}
