package marts

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"lakehouse/broker"
	"lakehouse/table"
)

// Defaults filled in by New for zero Config fields.
const (
	// DefaultRefreshEvery is how often Run rebuilds the marts and runs the checks.
	DefaultRefreshEvery = 5 * time.Minute
	// DefaultCompactEvery is how often Run compacts the streamed and ops tables.
	DefaultCompactEvery = 15 * time.Minute
	// DefaultExpireEvery is how often Run expires old snapshots. Streams
	// commit a snapshot per trigger (one a second by default) and commit
	// latency grows with the snapshots a table keeps, so expiry runs often.
	DefaultExpireEvery = 5 * time.Minute
	// DefaultRetryEvery is how soon Run retries a job whose last run failed
	// (never later than the job's own interval).
	DefaultRetryEvery = 30 * time.Second
	// DefaultKeepSnapshots is how many of a table's newest snapshots expiry
	// always keeps.
	DefaultKeepSnapshots = 10
	// DefaultExpireOlderThan: only snapshots older than this are expired.
	DefaultExpireOlderThan = 10 * time.Minute
	// DefaultCompactTargetBytes is the data-file size compaction aims for.
	DefaultCompactTargetBytes = 128 << 20
	// DefaultTopN is the number of rows per group in the top-N marts.
	DefaultTopN = 10
	// DefaultMaxSilverLag is the freshness check's limit on how far the
	// newest silver event time may trail the newest bronze event time.
	DefaultMaxSilverLag = 10 * time.Minute
	// DefaultTopic is the broker topic bronze is filled from.
	DefaultTopic = "recentchange"
)

// Tables owned by this package (besides the gold marts).
const (
	// OpsRuns has one row per scheduler job run (refresh, compact, expire).
	OpsRuns = "ops.runs"
	// OpsAssetChecks has one row per asset check per Refresh.
	OpsAssetChecks = "ops.asset_checks"
	// opsQuery is the marker query of this package's ops commits.
	opsQuery = "marts"
)

// Config configures Marts. Zero fields take the Default* values; a negative
// interval disables that job in Run.
type Config struct {
	RefreshEvery time.Duration
	CompactEvery time.Duration
	ExpireEvery  time.Duration
	RetryEvery   time.Duration

	// KeepSnapshots and ExpireOlderThan bound snapshot expiry: a snapshot is
	// expired only if it is older than ExpireOlderThan, not among the
	// KeepSnapshots newest, and not protected (see Protect).
	KeepSnapshots   int
	ExpireOlderThan time.Duration
	// CompactTargetBytes is the target data-file size of compaction.
	CompactTargetBytes int64

	// Protect returns, for a table, the snapshot a downstream stream's next
	// incremental read starts from (its last consumed snapshot; 0: nothing
	// to protect). Expiry keeps that snapshot and every newer one, so the
	// stream never finds its starting point expired. main wires it to the
	// stream checkpoints (silver consumes bronze.recentchange, sessions
	// consume silver.edits). When Protect is nil, expiry skips the tables
	// streams read from rather than guess. An error (or a protected snapshot
	// that is not in the table's history) skips that table and fails the run.
	Protect func(ctx context.Context, ident string) (int64, error)

	// TopN is the number of rows per group in top_editors_daily and hot_pages.
	TopN int
	// MaxSilverLag is the freshness check's limit.
	MaxSilverLag time.Duration
	// Topic is the broker topic the offsets check compares bronze with.
	Topic string

	// Logger receives run outcomes (slog.Default() when nil).
	Logger *slog.Logger
	// OnRun, if set, is called after every recorded job run (for example so
	// the demo can print a summary after the first refresh). It runs on the
	// scheduler goroutine and must not block.
	OnRun func(Run)
}

// Marts builds the gold marts, runs the asset checks and maintains the lake.
// Its methods are safe for concurrent use; jobs are serialised.
type Marts struct {
	cfg  Config
	lake lakeAPI
	log  broker.Log

	mu sync.Mutex // serialises jobs (refresh, check, compact, expire)

	lastMu sync.Mutex
	last   map[string]Run // newest run per job
}

// New returns Marts over lake, using log (may be nil) for the offsets check.
func New(lake *table.Lake, log broker.Log, cfg Config) *Marts {
	return newMarts(lake, log, cfg)
}

func newMarts(lake lakeAPI, log broker.Log, cfg Config) *Marts {
	if cfg.RefreshEvery == 0 {
		cfg.RefreshEvery = DefaultRefreshEvery
	}
	if cfg.CompactEvery == 0 {
		cfg.CompactEvery = DefaultCompactEvery
	}
	if cfg.ExpireEvery == 0 {
		cfg.ExpireEvery = DefaultExpireEvery
	}
	if cfg.RetryEvery <= 0 {
		cfg.RetryEvery = DefaultRetryEvery
	}
	if cfg.KeepSnapshots <= 0 {
		cfg.KeepSnapshots = DefaultKeepSnapshots
	}
	if cfg.ExpireOlderThan == 0 {
		cfg.ExpireOlderThan = DefaultExpireOlderThan
	}
	if cfg.CompactTargetBytes <= 0 {
		cfg.CompactTargetBytes = DefaultCompactTargetBytes
	}
	if cfg.TopN <= 0 {
		cfg.TopN = DefaultTopN
	}
	if cfg.MaxSilverLag <= 0 {
		cfg.MaxSilverLag = DefaultMaxSilverLag
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Marts{cfg: cfg, lake: lake, log: log}
}

// Config returns the effective configuration (defaults filled in).
func (m *Marts) Config() Config { return m.cfg }
