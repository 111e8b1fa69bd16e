package appliance

import (
	"fmt"
	"log/slog"
	"time"

	"lakehouse/ingest"
	"lakehouse/internal/health"
	"lakehouse/internal/httpbound"
	"lakehouse/stream"
)

// Config is the settings of a running appliance. Package main fills it
// from run's flags (a setting's name in Problems is its flag's); Check
// refuses what can never work. The comments give each field's zero value
// where it means something of its own.
type Config struct {
	Store
	Warehouse         string // file:///path or s3://bucket/prefix ("": <data>/warehouse)
	TakeOverWarehouse bool   // make this data directory the owner of a Warehouse another owns
	Source            string // the SSE stream's URL
	Since             string // on a first start only: replay history from this RFC 3339 time
	UserAgent         string
	Partitions        int // of the recentchange topic, fixed when it is created

	Trigger              time.Duration // bronze's; silver and sessions follow it
	DownstreamTrigger    time.Duration // silver's and sessions' (0: as soon as the upstream commits)
	SessionsTrigger      time.Duration // sessions' (0: DownstreamTrigger)
	MaxOffsetsPerTrigger int64
	MaxBytesPerTrigger   int64  // negative: no byte cap
	CheckpointLoss       string // rebuild or fresh
	Watermark            time.Duration
	MaxEventAhead        time.Duration
	SessionGap           time.Duration
	SessionMax           time.Duration // as sessions.Config.MaxSessionLength: 0 the default, negative none
	Refresh              time.Duration // the marts' (0: no marts; maintenance still runs)

	HTTPAddr   string // the HTTP surface ("": none)
	HTTPRemote bool
	HTTPToken  string
	HTTPBounds httpbound.Bounds // MaxConns from --http-max-conns; the timeouts are tests' to change
	NoIngest   bool
	Role       string // RoleAll ("" too), RoleIngest, RoleStream or RoleMarts

	Retention      time.Duration // broker retention by age (0: none)
	RetentionBytes int64         // by size; RetentionBytesAuto: a tenth of the file system
	DLQRetention   time.Duration
	DiskReserve    int64 // bytes kept free on the data directory's file system
	OpsRetention   time.Duration
	MaxSnapshots   int
	KeepSnapshots  int
	MartsMemory    string // DuckDB memory_limit of the marts' jobs
	// Models is the directory of the user's models (marts.LoadModels; "":
	// none), built by every refresh after the built-in marts.
	Models string

	// Version is the build's, shown in the observation and appliance.json.
	Version string
	// KillAtBronze, when positive, kills the process once bronze has
	// committed that many offsets (prove's children; killat.go).
	KillAtBronze int64

	// The rest are tests' and the bench's.

	// MaintainEvery and CompactEvery override the marts' maintenance
	// intervals (zero: the defaults).
	MaintainEvery, CompactEvery time.Duration
	// HoldHistory names tables whose snapshots maintenance never expires
	// (the bench reads every snapshot of a phase after it ends).
	HoldHistory []string
	// Health replaces health.DefaultRules when its Every is set.
	Health health.Rules
	// FreeOSMemory hands the heap back after a refresh or a compaction
	// (nil: debug.FreeOSMemory; release.go says why).
	FreeOSMemory func()
}

// Defaults the run command's flags show, for the settings whose default
// is the appliance's choice rather than a package's.
const (
	// DefaultDiskReserve leaves room for the queries to drain a full
	// broker's worth of batches into the warehouse.
	DefaultDiskReserve = 128 << 20
	// DefaultRetention is a week of the broker's records, the past
	// `reland` can replay.
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultS3Trigger is Trigger's default on an S3 warehouse. Each bronze
	// commit, and the silver and sessions commits that follow it, write a
	// data file, a manifest, a manifest list and a metadata file per table
	// and read metadata back, all of them billed requests on S3; commits
	// once a second cost dozens of requests a second at the real rate.
	// Thirty seconds cuts the requests per day by more than ten (commits
	// are then fewer than the requests that do not depend on them:
	// refreshes, maintenance, progress rows) and keeps an event's delay to
	// silver within about a trigger, which a dashboard refreshed every few
	// minutes does not notice.
	DefaultS3Trigger = 30 * time.Second
)

// downstream adapts a query's config for silver and sessions: they read
// committed snapshots of an upstream table, so by default they run as soon
// as it commits instead of waiting for a trigger phase of their own.
func (c *Config) downstream(cfg stream.Config) stream.Config {
	cfg.Trigger = c.DownstreamTrigger
	if cfg.Trigger <= 0 {
		cfg.Trigger = -1 // no pause: the source's Wait blocks until the upstream commits
	}
	return cfg
}

func (c *Config) streamConfig(name string, log *slog.Logger) (stream.Config, error) {
	cfg := stream.Config{
		Name:                 name,
		Trigger:              c.Trigger,
		MaxOffsetsPerTrigger: c.MaxOffsetsPerTrigger,
		MaxBytesPerTrigger:   c.MaxBytesPerTrigger,
		DataDir:              c.Data,
		Logger:               log,
	}
	switch c.CheckpointLoss {
	case "rebuild":
		cfg.OnCheckpointLoss = stream.RebuildFromTable
	case "fresh":
		cfg.OnCheckpointLoss = stream.StartFresh
	default:
		return cfg, fmt.Errorf("--checkpoint-loss %q: want rebuild or fresh", c.CheckpointLoss)
	}
	return cfg, nil
}

// ingestConfig adapts ingest to the bronze trigger: an event may wait in
// ingest's batch for up to one trigger (ingest.Config.BatchDelay). Bronze
// starts a batch at most once per trigger, so an event appended sooner
// waits out the rest of the trigger in the broker instead; with the same
// bound, ingest's batches come a little over a trigger apart, bronze's
// trigger has always elapsed when one lands, and bronze starts on it at
// once (its source's Wait), silver on bronze's commit. The event waits no
// longer than before in all (the soak measured it shorter), and the broker
// takes one fsynced append per trigger instead of one per
// ingest.DefaultBatchDelay. A batch also ends at ingest.DefaultBatchMax
// events per second of the trigger (its bytes stay capped by
// ingest.DefaultBatchMaxBytes): at a long trigger (an S3 warehouse's) a
// fixed count would end it early at the real rate, just after bronze's
// batch began, and its events would wait most of another trigger in the
// broker.
func (c *Config) ingestConfig(log *slog.Logger) ingest.Config {
	return ingest.Config{URL: c.Source, UserAgent: c.UserAgent, Partitions: c.Partitions,
		MaxEventAhead: c.MaxEventAhead, BatchDelay: c.Trigger, BatchMax: ingestBatchMax(c.Trigger), Logger: log}
}

// ingestBatchMax is ingest's count cap for a trigger: DefaultBatchMax per
// started second, DefaultBatchMax at least.
func ingestBatchMax(trigger time.Duration) int {
	secs := int((trigger + time.Second - 1) / time.Second)
	return ingest.DefaultBatchMax * max(1, secs)
}
