package stream

import (
	"context"
	"encoding/json"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Batch is one micro-batch as the runner hands it to the Source, the
// Processor and the Sink. A re-run of a batch after a crash has the same ID,
// Start, End and Meta as the first run.
type Batch struct {
	Query   string // query name
	QueryID string // id of the query run that commits the batch
	ID      int64
	Start   Offset // exclusive lower bound of the batch's input
	End     Offset // inclusive upper bound; the next batch starts here
	Meta    json.RawMessage
	// Unfenced: the batch does not continue the sink's last batch (the
	// first batch of a fresh start after a lost checkpoint, which re-reads
	// from the earliest offsets), so the sink does not check that it does.
	Unfenced bool
}

// Limit caps one batch. A Source plans whole units (a record, a snapshot)
// and always at least one when input is available, so one unit larger than
// Bytes still makes a batch of its own.
type Limit struct {
	// Units caps the units a batch covers (records, rows), summed over
	// partitions (Config.MaxOffsetsPerTrigger).
	Units int64
	// Bytes caps the input bytes a batch covers (Config.MaxBytesPerTrigger);
	// 0 or less: no byte cap.
	Bytes int64
}

// Source is where a query's input comes from. Offsets are opaque to the
// engine; a Source must plan ranges deterministically so that a re-run reads
// exactly the same input.
type Source interface {
	// Earliest returns the position before the first available input; a
	// query with no history starts there.
	Earliest(ctx context.Context) (Offset, error)
	// Plan returns the end of the next batch starting at start, within
	// limit, and the number of units (records, rows) it covers. It returns
	// start and 0 when nothing new is available. Returns ErrSourceBehind if
	// start is no longer (or was never) readable.
	Plan(ctx context.Context, start Offset, limit Limit) (end Offset, n int64, err error)
	// Wait blocks until input beyond start may be available, or ctx is done
	// (returning ctx.Err()).
	Wait(ctx context.Context, start Offset) error
	// Read returns the input of the range (start, end] as Arrow records and
	// its payload size in bytes. The caller releases the records.
	Read(ctx context.Context, start, end Offset) ([]arrow.RecordBatch, int64, error)
	// Lag returns how many units are available beyond end.
	Lag(ctx context.Context, end Offset) (int64, error)
}

// Processor turns a batch's input into the sink's rows. A nil Processor
// passes the input through unchanged. Process must be deterministic given
// the batch (including b.Meta) and, for a StatefulProcessor, the loaded state.
// It takes ownership of in (releasing what it does not return).
type Processor interface {
	Process(ctx context.Context, b Batch, in []arrow.RecordBatch) ([]arrow.RecordBatch, error)
}

// StateStore is where a stateful query's state versions are kept: the
// query's checkpoint (state/<N>), which the runner owns. A processor reads
// the versions it needs (a delta reads the chain back to a full one); the
// runner writes the version each batch produces.
type StateStore interface {
	// LoadState returns the bytes of state version v, or an error wrapping
	// ErrNoEntry when the store has none.
	LoadState(v int64) ([]byte, error)
	// StateDir says where the versions are, for messages.
	StateDir() string
}

// StatefulProcessor is a Processor with versioned state. Before planning
// batch N (PlanMeta) and again before processing it, the runner calls
// LoadState with version N-1: the processor makes that version its state,
// reading from store what it needs (nothing when it holds that version
// already). After Process the runner stores SaveState's bytes durably as
// state/N before the commit entry, so a re-run of N starts from N-1 again.
type StatefulProcessor interface {
	Processor
	LoadState(ctx context.Context, store StateStore, version int64) error
	SaveState(ctx context.Context) ([]byte, error)
}

// MetaPlanner is implemented by a Processor that fixes per-batch metadata
// (for example a watermark) in the batch's offset entry before it runs.
type MetaPlanner interface {
	PlanMeta(ctx context.Context, b Batch) (json.RawMessage, error)
}

// Marker is what a sink's table records about the last batch a query
// committed: it survives the loss of the checkpoint.
type Marker struct {
	Batch   int64
	End     Offset
	QueryID string // may be empty if the sink does not record it
}

// SinkResult reports one Sink.Commit.
type SinkResult struct {
	// Committed is false when the sink already held batch b.ID or a later
	// batch of the query and wrote nothing.
	Committed  bool
	SnapshotID int64
	// Rows is the number of rows the commit added.
	Rows int64
	// Newest is the newest value of the sink's time column among the rows
	// committed, and Latency, for each row, how long before the commit
	// returned that time was (zero and nil when the sink has no time
	// column or committed nothing).
	Newest  time.Time
	Latency *Histogram
}

// Sink commits a batch's rows exactly once.
type Sink interface {
	// Commit writes rows as batch b in one atomic commit whose marker
	// carries b.Query, b.QueryID, b.ID and b.End. If the sink already holds
	// batch b.ID (or a later one) of b.Query it writes nothing and returns
	// Committed == false. It does not release rows.
	Commit(ctx context.Context, b Batch, rows []arrow.RecordBatch) (SinkResult, error)
	// LastCommitted returns the marker of the last batch committed for the
	// query, and false if there is none.
	LastCommitted(ctx context.Context, query string) (Marker, bool, error)
}

// ProgressSink keeps progress rows durably (ops.stream_progress). Write
// must be idempotent per (query, last batch of rows): after a crash the
// runner writes the rows after Last again.
type ProgressSink interface {
	// WriteProgress stores rows (in batch order) for query.
	WriteProgress(ctx context.Context, query string, rows []Progress) error
	// LastProgress returns the highest batch id whose row is stored.
	LastProgress(ctx context.Context, query string) (int64, bool, error)
}
