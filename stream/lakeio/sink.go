package lakeio

import (
	"strconv"
	"time"

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
type PropsFunc = func(b stream.Batch) map[string]string

// NewSink returns the sink of a stateful query reading a table: a
// stream.TableSink on ident whose snapshots also carry props (the batch's
// stats and state version).
func NewSink(lake *table.Lake, ident string, props PropsFunc) *stream.TableSink {
	return &stream.TableSink{Lake: lake, Table: ident, Props: props}
}
