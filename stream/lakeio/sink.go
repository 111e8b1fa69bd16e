package lakeio

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/stream"
	"lakehouse/table"
)

// Snapshot-summary keys under which Sink records a batch's processor stats
// and state version, so that the table can be checked against the state
// (the keys carry the table's "lakehouse." prefix already).
const (
	SummaryLate         = "lakehouse.rows-dropped-by-watermark"
	SummaryDuplicates   = "lakehouse.duplicates-dropped"
	SummaryUnparseable  = "lakehouse.unparseable"
	SummaryWatermark    = "lakehouse.watermark"     // RFC 3339, UTC; absent when none
	SummaryStateVersion = "lakehouse.state-version" // the state version the batch produced
	summaryQueryID      = "lakehouse." + stream.PropStreamQueryID
)

// StatsProps renders a batch's stats and the state version it produced as
// snapshot-summary properties.
func StatsProps(s stream.ProcessStats, stateVersion int64) map[string]string {
	p := map[string]string{
		SummaryLate:         strconv.FormatInt(s.DroppedByWatermark, 10),
		SummaryDuplicates:   strconv.FormatInt(s.Duplicates, 10),
		SummaryUnparseable:  strconv.FormatInt(s.Unparseable, 10),
		SummaryStateVersion: strconv.FormatInt(stateVersion, 10),
	}
	if !s.Watermark.IsZero() {
		p[SummaryWatermark] = s.Watermark.UTC().Format(time.RFC3339Nano)
	}
	return p
}

// BatchProps is the summary of batch b for a stateful processor whose last
// processed batch was statsBatch with stats: the full stats when they are
// b's, else only the state version b produced.
func BatchProps(b stream.Batch, statsBatch int64, stats stream.ProcessStats) map[string]string {
	if statsBatch != b.ID {
		return map[string]string{SummaryStateVersion: strconv.FormatInt(b.ID, 10)}
	}
	return StatsProps(stats, b.ID)
}

// StatsFromSummary reads what StatsProps wrote; ok is false when the summary
// has no stats.
func StatsFromSummary(sum map[string]string) (s stream.ProcessStats, version int64, ok bool) {
	get := func(k string) int64 {
		n, err := strconv.ParseInt(sum[k], 10, 64)
		if err == nil {
			ok = true
		}
		return n
	}
	s.DroppedByWatermark, s.Duplicates, s.Unparseable = get(SummaryLate), get(SummaryDuplicates), get(SummaryUnparseable)
	version = get(SummaryStateVersion)
	if w, err := time.Parse(time.RFC3339Nano, sum[SummaryWatermark]); err == nil {
		s.Watermark = w
	}
	return s, version, ok
}

// PropsFunc returns the extra snapshot-summary properties of batch b. It is
// called after b was processed.
type PropsFunc func(b stream.Batch) map[string]string

// Sink commits each batch as one snapshot of a table, exactly once, through
// table.Lake.CommitBatch (whose marker check makes a replayed batch a
// no-op). It is stream.TableSink plus per-batch summary properties.
type Sink struct {
	Lake  *table.Lake
	Table string
	// Props, when set, adds summary properties to each batch's snapshot.
	Props PropsFunc
}

// NewSink returns a Sink committing to ident.
func NewSink(lake *table.Lake, ident string, props PropsFunc) *Sink {
	return &Sink{Lake: lake, Table: ident, Props: props}
}

// Commit writes rows as batch b (see stream.Sink).
func (s *Sink) Commit(ctx context.Context, b stream.Batch, rows []arrow.RecordBatch) (stream.SinkResult, error) {
	props := map[string]string{}
	if s.Props != nil {
		maps.Copy(props, s.Props(b))
	}
	props[stream.PropStreamQueryID] = b.QueryID
	props[stream.PropStreamStart] = string(b.Start)
	props[stream.PropStreamQuery] = b.Query
	res, err := s.Lake.CommitBatch(ctx, s.Table, table.Batch{
		Query: b.Query, ID: b.ID, Offsets: string(b.End), Records: rows, Props: props,
	})
	if err != nil {
		return stream.SinkResult{}, fmt.Errorf("commit %s batch %d to %s: %w", b.Query, b.ID, s.Table, err)
	}
	return stream.SinkResult{Committed: res.Committed, SnapshotID: res.SnapshotID, Rows: res.Rows}, nil
}

// LastCommitted returns the table's marker of query, with the query id
// looked up in the marker snapshot's summary (empty if it was expired).
func (s *Sink) LastCommitted(ctx context.Context, query string) (stream.Marker, bool, error) {
	m, ok, err := s.Lake.LastCommitted(ctx, s.Table, query)
	if err != nil || !ok {
		return stream.Marker{}, false, err
	}
	out := stream.Marker{Batch: m.Batch, End: stream.Offset(m.Offsets)}
	snaps, err := s.Lake.AppendsAfter(ctx, s.Table, 0)
	if err != nil {
		return stream.Marker{}, false, fmt.Errorf("read snapshots of %s: %w", s.Table, err)
	}
	for _, sn := range snaps {
		if sn.ID == m.SnapshotID {
			out.QueryID = sn.Summary[summaryQueryID]
		}
	}
	return out, true, nil
}
