package marts

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"lakehouse/broker"
	"lakehouse/table"
)

// Defaults filled in by New for zero Config fields.
const (
	// DefaultRefreshEvery is how often Run rebuilds the marts and runs the checks.
	DefaultRefreshEvery = 5 * time.Minute
	// DefaultMaintainEvery is how often Run looks at every table and does
	// the maintenance that is due (expiry, compaction, orphan cleanup). What
	// is due is read from the tables, never from timers, so a restart finds
	// it due too.
	DefaultMaintainEvery = 10 * time.Second
	// DefaultCompactEvery is how often the maintenance loop looks for data
	// files to compact. Each look that finds a tier due rewrites it, so the
	// interval sets how many small files gather first (one per commit): two
	// minutes' worth at the default trigger merge in one rewrite instead of
	// one every FanIn commits. Against one minute, 12 minutes side by side
	// from one seed at 35 ev/s: 4.11 against 4.36 % of a core (each look
	// plans, writes and commits every table that has a tier due, and
	// appends a row to ops.runs), with up to about 120 instead of 60 small
	// files live in bronze and silver between looks.
	DefaultCompactEvery = 2 * time.Minute
	// DefaultRetryEvery is how soon Run retries a refresh whose last run
	// failed (never later than its own interval).
	DefaultRetryEvery = 30 * time.Second
	// DefaultMaxSnapshots: a table holding more snapshots than this is
	// expired down to DefaultKeepSnapshots. Streams commit a snapshot per
	// batch (one a second by default), and iceberg-go's per-commit cost
	// grows with the snapshots a table keeps, so the bound is by count,
	// and low: every snapshot kept makes each later commit and expiry
	// read more (of the bounds compared, keeping 10 of at most 25 cost
	// the least CPU, against 20 of 50 and 30 of 80).
	DefaultMaxSnapshots = 25
	// DefaultKeepSnapshots is how many of a table's newest snapshots expiry
	// keeps.
	DefaultKeepSnapshots = 10
	// DefaultOrphanEvery is how often each table's orphan files (left by
	// commits a crash interrupted) are deleted; the last run is kept in the
	// table, so it is due after a restart too.
	DefaultOrphanEvery = 24 * time.Hour
	// DefaultTopN is the number of rows per group in the top-N marts.
	DefaultTopN = 10
	// DefaultMaxSilverLag is the freshness check's limit on how far the
	// newest silver event time may trail the newest bronze event time.
	DefaultMaxSilverLag = 10 * time.Minute
	// DefaultTopic is the broker topic bronze is filled from.
	DefaultTopic = "recentchange"
	// DefaultDuckMemoryLimit bounds the DuckDB memory of a refresh or a
	// check run (its buffer manager: scans, groupings, sorts); past it
	// DuckDB spills to DuckTempDir. A refresh reads a whole UTC day of silver
	// (about 1.7 million edits late in a day of the real stream), so the
	// marts' SQL groups rather than counting DISTINCT (which keeps its sets
	// in memory and fails past the limit: TestRefreshSpillsUnderMemoryLimit).
	// The limit is low because a refresh shares the process with the
	// streams: past it DuckDB spills instead of growing the process, and
	// the grouping SQL lets a refresh of a whole day finish within it.
	// The memory DuckDB allocates outside its buffer manager comes on top
	// of the limit.
	DefaultDuckMemoryLimit = "64MB"
	// DefaultDuckThreads is DuckDB's threads for a refresh or a check run.
	// One thread holds less memory at once than one per core for a
	// refresh a little longer, and leaves the other core to the streams
	// the refresh runs beside.
	DefaultDuckThreads = 1
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
	RefreshEvery  time.Duration
	MaintainEvery time.Duration
	CompactEvery  time.Duration
	RetryEvery    time.Duration
	OrphanEvery   time.Duration
	// OpsRetention is how long rows of the ops tables (stream progress,
	// job runs, asset checks) are kept; 0 keeps them all. Old rows are
	// deleted at most once an hour per table.
	OpsRetention time.Duration

	// MaxSnapshots and KeepSnapshots bound each table's history: once a
	// table holds more than MaxSnapshots, expiry keeps its KeepSnapshots
	// newest, every snapshot younger than MinSnapshotAge (0: none), and
	// every snapshot Protect reports as not yet consumed.
	MaxSnapshots   int
	KeepSnapshots  int
	MinSnapshotAge time.Duration
	// Compact is the compaction policy (table.DefaultCompactPolicy() when
	// its TargetBytes is 0).
	Compact table.CompactPolicy

	// Protect returns, for a table, the snapshot a downstream stream's next
	// incremental read starts from (its last consumed snapshot; 0: nothing
	// to protect). Expiry keeps that snapshot and every newer one, so the
	// stream never finds its starting point expired. main wires it to the
	// stream markers (silver consumes bronze.recentchange, sessions consume
	// silver.edits). When Protect is nil, expiry skips the tables streams
	// read from rather than guess. An error wrapping ErrNotConsumed skips
	// the table quietly (its reader has consumed nothing yet); any other
	// error (or a protected snapshot that is not in the table's history)
	// skips that table and fails the pass.
	Protect func(ctx context.Context, ident string) (int64, error)

	// TopN is the number of rows per group in top_editors_daily and hot_pages.
	TopN int
	// hotMaxCandidates bounds the pages hot_pages prunes its input to
	// (defaultHotMaxCandidates when 0; negative: never prune, for tests).
	hotMaxCandidates int
	// freshRows bounds the bronze rows of each partition the freshness
	// check parses (defaultFreshRows when 0).
	freshRows int64
	// MaxSilverLag is the freshness check's limit.
	MaxSilverLag time.Duration
	// Topic is the broker topic the offsets check compares bronze with.
	Topic string
	// DuckMemoryLimit is DuckDB's memory_limit for refreshes and checks
	// (DefaultDuckMemoryLimit), DuckTempDir where they spill past it
	// (main: <data>/tmp/duckdb; "" : a directory under os.TempDir()),
	// created with its parents whenever a refresh or check opens DuckDB.
	DuckMemoryLimit string
	DuckTempDir     string
	// DuckThreads is DuckDB's threads for refreshes and checks
	// (DefaultDuckThreads).
	DuckThreads int
	// ChunkRows bounds the silver edits one statement of a refresh groups
	// at once (DefaultChunkRows): wiki_activity_hourly is built a few
	// hours at a time and the unique-id check counts the ids in parts.
	ChunkRows int64

	// Models are the user's models (LoadModels), built after the built-in
	// marts by every refresh (model.go); a model that breaks a rule is
	// refused with a failed check, the others are built.
	Models []Model
	// RefusedModels are the model files LoadModels refused (their
	// header): each refresh reports them as failed checks.
	RefusedModels []error

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

	// mu serialises the jobs whose readers hold data files (refresh and
	// check read the files they planned; compaction replaces files).
	// Expiry never removes a file a live snapshot references, and nothing
	// but compaction unreferences a streamed table's files, so expiry and
	// orphan cleanup run under expireMu beside a refresh or a compaction.
	mu       sync.Mutex
	expireMu sync.Mutex
	opsMu    sync.Mutex // serialises the ops-table appends (batch ids per table)

	lastMu     sync.Mutex
	last       map[string]Run // newest run per job
	lastReport *Report        // newest Refresh

	// refusedLogged: the refused models were logged (under mu).
	refusedLogged bool

	filesSeen map[string]filesCheck // per table, what the last compaction check saw (under mu)
	// checkedLoaded: bronzeSeen and idsSeen were read from the lake's
	// record (state.go) by this process's first refresh or check (under mu).
	checkedLoaded bool
	// bronzeSeen is what the last passing offsets check established (under
	// mu; nil: count every row).
	bronzeSeen *bronzeSeen
	// bronzeAll is every bronze file when attachBronze attached fewer, and
	// bronzeTable bronze's UUID as attachBronze planned it (under mu; nil:
	// the view holds them all).
	bronzeAll   *table.Files
	bronzeTable string
	// bronzeFloor is the smallest of the partitions' newest offsets in
	// bronze's marker, read by attachBronze before it planned the files
	// (under mu; ok false: the marker said nothing usable).
	bronzeFloor struct {
		offset int64
		ok     bool
	}
	// idsSeen holds the silver.edits files whose ids the last passing
	// uniqueness check covered, idsPending those it will have covered if
	// it passes (under mu; nil: none).
	idsSeen, idsPending *seenFiles
	heldSince           map[string]time.Time // per table, when warnHeld last warned (under expireMu)
}

// New returns Marts over lake, using log (may be nil) for the offsets check.
func New(lake *table.Lake, log broker.Log, cfg Config) *Marts {
	return newMarts(lake, log, cfg)
}

func newMarts(lake lakeAPI, log broker.Log, cfg Config) *Marts {
	if cfg.RefreshEvery == 0 {
		cfg.RefreshEvery = DefaultRefreshEvery
	}
	if cfg.MaintainEvery == 0 {
		cfg.MaintainEvery = DefaultMaintainEvery
	}
	if cfg.CompactEvery == 0 {
		cfg.CompactEvery = DefaultCompactEvery
	}
	if cfg.RetryEvery <= 0 {
		cfg.RetryEvery = DefaultRetryEvery
	}
	if cfg.OrphanEvery == 0 {
		cfg.OrphanEvery = DefaultOrphanEvery
	}
	if cfg.ChunkRows <= 0 {
		cfg.ChunkRows = DefaultChunkRows
	}
	if cfg.KeepSnapshots <= 0 {
		cfg.KeepSnapshots = DefaultKeepSnapshots
	}
	if cfg.MaxSnapshots <= 0 {
		cfg.MaxSnapshots = max(DefaultMaxSnapshots, cfg.KeepSnapshots)
	}
	cfg.MaxSnapshots = max(cfg.MaxSnapshots, cfg.KeepSnapshots)
	if cfg.Compact.TargetBytes == 0 {
		cfg.Compact = table.DefaultCompactPolicy()
	}
	if cfg.TopN <= 0 {
		cfg.TopN = DefaultTopN
	}
	if cfg.hotMaxCandidates == 0 {
		cfg.hotMaxCandidates = defaultHotMaxCandidates
	}
	if cfg.freshRows <= 0 {
		cfg.freshRows = defaultFreshRows
	}
	if cfg.MaxSilverLag <= 0 {
		cfg.MaxSilverLag = DefaultMaxSilverLag
	}
	if cfg.DuckMemoryLimit == "" {
		cfg.DuckMemoryLimit = DefaultDuckMemoryLimit
	}
	if cfg.DuckThreads <= 0 {
		cfg.DuckThreads = DefaultDuckThreads
	}
	if cfg.DuckTempDir == "" {
		cfg.DuckTempDir = filepath.Join(os.TempDir(), "lakehouse-duckdb")
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Marts{cfg: cfg, lake: offThread{lake}, log: log, filesSeen: map[string]filesCheck{}, heldSince: map[string]time.Time{}}
}

// Config returns the effective configuration (defaults filled in).
func (m *Marts) Config() Config { return m.cfg }
