package stream

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"time"
)

// Defaults applied by New when a Config field is zero.
const (
	// DefaultTrigger is the processing-time trigger interval: a batch starts
	// at most once per interval. A batch that takes longer than the interval,
	// or that hit MaxOffsetsPerTrigger, is followed immediately by the next one.
	DefaultTrigger = time.Second
	// DefaultMaxOffsetsPerTrigger caps the offsets (records, for bronze) one
	// batch may cover, summed over partitions. It bounds memory: a batch's
	// input is held while it is processed and the next capped batch is read
	// ahead, so at the ~1.2 KB of an average recentchange event 20,000
	// records are ~24 MiB per batch in flight.
	DefaultMaxOffsetsPerTrigger = 20_000
	// DefaultMaxBytesPerTrigger caps the input bytes one batch may cover
	// (record keys and values for bronze; the rows' in-memory size for a
	// table source), whatever the size of one event: 20,000 events of
	// 200 KB would be 4 GB in one batch. A batch holds whole records and at
	// least one. The batch in flight, the next one read ahead and the
	// Parquet writer's buffers are each about this size, so it bounds the
	// memory of a backlog drain at a few times 32 MiB per query
	// (TestLargeEventsLandInSilver: 200 KB events drain in about 550 MiB at
	// 32 MiB, 960 MiB at 64, 350 MiB at 16); at the ~1.2 KB of an average
	// event the offset cap (20,000 records, ~24 MiB) binds first.
	DefaultMaxBytesPerTrigger = 32 << 20
	// DefaultRetainBatches is how many offset/commit/state entries the
	// checkpoint keeps (Spark's minBatchesToRetain).
	DefaultRetainBatches = 100
	// DefaultProgressEvery is how many batches' progress rows are gathered
	// into one commit to ops.stream_progress. The rows are durable before that
	// in the commit log and are flushed again after a crash. Each flush is a
	// table commit, as costly as a batch's: at 10 rows or 10 s the three
	// queries made 16 of the appliance's 150 commits a minute at 35 ev/s.
	DefaultProgressEvery = 60
	// DefaultProgressInterval bounds how long a progress row may wait before
	// it is flushed to ops.stream_progress.
	DefaultProgressInterval = time.Minute
)

// CheckpointLoss says what a query does when its checkpoint directory is
// missing or empty but its sink table already holds batches of the query.
type CheckpointLoss int

const (
	// RebuildFromTable (the default) starts a new query id but takes the
	// position from the table's marker (the end offsets of the last committed
	// batch) and continues with the next batch id: no offset lands twice.
	RebuildFromTable CheckpointLoss = iota
	// StartFresh behaves as Spark does: a new query id starts from the
	// earliest offsets of the source. THIS DUPLICATES every record the table
	// already holds. It exists for sinks that tolerate replays and for tests.
	StartFresh
)

func (m CheckpointLoss) String() string {
	switch m {
	case RebuildFromTable:
		return "rebuild-from-table"
	case StartFresh:
		return "start-fresh"
	}
	return fmt.Sprintf("CheckpointLoss(%d)", int(m))
}

// Config configures one streaming query. Zero fields are filled from the
// Default* constants by New / RunBronze.
type Config struct {
	// Name is the query name (for example "bronze"); it keys the sink's
	// marker, the checkpoint directory and the progress rows.
	Name string
	// Trigger is the processing-time trigger interval (DefaultTrigger). A
	// negative value means no pause between batches. A batch that hit
	// MaxOffsetsPerTrigger or MaxBytesPerTrigger is followed at once (a
	// backlog drains at full speed, in capped batches). Query.Drain ignores
	// it.
	Trigger time.Duration
	// MaxOffsetsPerTrigger caps one batch (DefaultMaxOffsetsPerTrigger).
	MaxOffsetsPerTrigger int64
	// MaxBytesPerTrigger caps one batch's input bytes
	// (DefaultMaxBytesPerTrigger; negative: no byte cap). A batch that hit
	// it is followed at once, as one that hit MaxOffsetsPerTrigger.
	MaxBytesPerTrigger int64
	// CheckpointDir is the query's checkpoint directory. When empty, New uses
	// CheckpointPath(DataDir, Name).
	CheckpointDir string
	// DataDir is the appliance's data directory; only used to derive
	// CheckpointDir.
	DataDir string
	// OnCheckpointLoss picks the behaviour when the checkpoint is gone
	// (RebuildFromTable by default).
	OnCheckpointLoss CheckpointLoss
	// RetainBatches is how many log entries the checkpoint keeps
	// (DefaultRetainBatches).
	RetainBatches int
	// ProgressEvery and ProgressInterval control how progress rows are
	// batched into ops.stream_progress commits.
	ProgressEvery    int
	ProgressInterval time.Duration
	// Logger receives one line per batch and loud lines on query-id changes
	// (slog.Default() when nil).
	Logger *slog.Logger
	// IntakeColumn, when set, names a microsecond timestamp column of the
	// input holding when the appliance took each record in (silver:
	// bronze's broker_ts). Each input row's age when its batch's commit
	// returned is reported as Progress.Intake: the appliance's own delay,
	// whatever time the events themselves carry (a replay of old events
	// does not read as old).
	IntakeColumn string
	// OnBatch, when set, is called with each batch's progress after its
	// commit entry is durable, on the query's goroutine: it must not block
	// (the appliance's metrics and health read it).
	OnBatch func(Progress)
}

// CheckpointPath is where a query's checkpoint lives under a data directory.
func CheckpointPath(dataDir, query string) string {
	return filepath.Join(dataDir, "checkpoints", query)
}

// WithDefaults returns c with every zero field filled (the checkpoint
// directory derived from DataDir and Name), as New uses it.
func (c Config) WithDefaults() (Config, error) {
	if c.Name == "" {
		return c, fmt.Errorf("check config: %w", ErrNoName)
	}
	if c.Trigger == 0 {
		c.Trigger = DefaultTrigger
	}
	if c.MaxOffsetsPerTrigger <= 0 {
		c.MaxOffsetsPerTrigger = DefaultMaxOffsetsPerTrigger
	}
	if c.MaxBytesPerTrigger == 0 {
		c.MaxBytesPerTrigger = DefaultMaxBytesPerTrigger
	}
	if c.CheckpointDir == "" {
		if c.DataDir == "" {
			return c, fmt.Errorf("check config: %w", ErrNoCheckpointDir)
		}
		c.CheckpointDir = CheckpointPath(c.DataDir, c.Name)
	}
	if c.RetainBatches <= 0 {
		c.RetainBatches = DefaultRetainBatches
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = DefaultProgressEvery
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
