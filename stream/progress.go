package stream

import (
	"log/slog"
	"time"
)

// Progress describes one batch, as Spark's StreamingQueryProgress does. It is
// stored in the batch's commit entry, logged, and flushed to
// ops.stream_progress.
type Progress struct {
	Query   string    `json:"query"`
	QueryID string    `json:"query_id"`
	Batch   int64     `json:"batch"`
	Started time.Time `json:"started"`
	Start   Offset    `json:"start"`
	End     Offset    `json:"end"`
	// RowsIn is the input rows read from the source, RowsOut the rows handed
	// to the sink, Bytes the input payload size.
	RowsIn  int64 `json:"rows_in"`
	RowsOut int64 `json:"rows_out"`
	Bytes   int64 `json:"bytes"`
	// Committed is false when the sink found the batch already committed (a
	// re-run after a crash between the table commit and the commit entry).
	Committed  bool  `json:"committed"`
	Replayed   bool  `json:"replayed"` // re-run of a planned batch after a restart
	SnapshotID int64 `json:"snapshot_id"`
	// Durations of the phases; Commit is the sink's commit latency.
	Plan    time.Duration `json:"plan_ns"`
	Read    time.Duration `json:"read_ns"`
	Process time.Duration `json:"process_ns"`
	Commit  time.Duration `json:"commit_ns"`
	Total   time.Duration `json:"total_ns"`
	// Lag is the source units available beyond End when the batch finished.
	Lag int64 `json:"lag"`
	// Newest is the newest time the sink's time column held in the rows
	// committed (bronze: broker append time, silver: intake time); Latency
	// is their age when the commit returned (kept in memory only).
	Newest  time.Time  `json:"newest,omitzero"`
	Latency *Histogram `json:"-"`
	// Intake is, for each input row, the commit's return time minus the
	// row's Config.IntakeColumn (nil without one, or when the batch
	// committed nothing; kept in memory only).
	Intake *Histogram `json:"-"`
	// Stats are the Processor's counters (zero for bronze).
	Stats ProcessStats `json:"stats"`
	// QueryIDChanges counts the query-id changes this run detected at start
	// (checkpoint lost or replaced); PreviousQueryID is the id the table's
	// marker carried. A non-zero count is also logged at error level.
	QueryIDChanges  int64  `json:"query_id_changes"`
	PreviousQueryID string `json:"previous_query_id,omitempty"`
}

// RecordsPerSecond is the batch's input rate over its total duration.
func (p Progress) RecordsPerSecond() float64 {
	if p.Total <= 0 {
		return 0
	}
	return float64(p.RowsIn) / p.Total.Seconds()
}

// ProcessStats are the counters a Processor reports for one batch.
type ProcessStats struct {
	// Skipped counts input rows the processor does not take at all (silver:
	// event types other than edit and new); the rest are its candidates.
	Skipped            int64     `json:"skipped,omitempty"`
	DroppedByWatermark int64     `json:"dropped_by_watermark"`
	Duplicates         int64     `json:"duplicates"`
	Unparseable        int64     `json:"unparseable"`
	Watermark          time.Time `json:"watermark"` // zero: no watermark
}

// StatsReporter is implemented by a Processor that counts what it dropped;
// the runner calls BatchStats after each Process.
type StatsReporter interface {
	BatchStats() ProcessStats
}

func (p Progress) log(l *slog.Logger) {
	l.Info("stream batch",
		"query", p.Query, "query_id", p.QueryID, "batch", p.Batch,
		"rows_in", p.RowsIn, "rows_out", p.RowsOut, "bytes", p.Bytes,
		"committed", p.Committed, "replayed", p.Replayed,
		"read", p.Read, "process", p.Process, "commit", p.Commit, "total", p.Total,
		"end", string(p.End), "lag", p.Lag, "query_id_changes", p.QueryIDChanges)
}
