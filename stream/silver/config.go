package silver

import (
	"log/slog"
	"time"

	"lakehouse/internal/recentchange"
	"lakehouse/stream/lakeio"
	"lakehouse/table"
)

// Defaults filled in by NewProcessor for zero Config fields.
const (
	// DefaultWatermarkDelay is how far behind the newest event time seen the
	// watermark trails: events older than that are late.
	DefaultWatermarkDelay = 10 * time.Minute
	// DefaultMaxDeltaChain bounds how many state versions in a row may be
	// saved as deltas before a full snapshot is written. Keep it well below
	// the stream's RetainBatches (Run clamps it to half of that), or a purge
	// could remove the snapshot a delta chain starts from.
	DefaultMaxDeltaChain = 20
	// DefaultRecoverTimeout bounds rebuilding a lost dedup state from
	// silver.edits.
	DefaultRecoverTimeout = 10 * time.Minute
	// QueryName is the query's name: it keys the checkpoint directory, the
	// table marker and the progress rows.
	QueryName = "silver"
)

// Reads is what silver reads (bronze's appends) and where its marker says
// how far: maintenance never expires a bronze snapshot silver has not read.
var Reads = lakeio.Reader{Source: table.Bronze, Sink: table.SilverEdits, Query: QueryName}

// Config configures the silver query.
type Config struct {
	// WatermarkDelay is the allowed lateness (DefaultWatermarkDelay).
	WatermarkDelay time.Duration
	// MaxDeltaChain bounds the delta versions between full state snapshots
	// (DefaultMaxDeltaChain). 1 writes a full snapshot every batch.
	MaxDeltaChain int
	// RecoverTimeout bounds rebuilding a lost dedup state from silver.edits
	// (DefaultRecoverTimeout).
	RecoverTimeout time.Duration
	// MaxEventAhead is the margin of the event-time rule (recentchange.CheckTimes,
	// against bronze's broker_ts): an edit more than this ahead of its
	// meta.dt or the broker's clock is counted unparseable and never moves
	// the watermark (recentchange.DefaultMaxAhead). Give it the ingest contract's
	// value (ingest.Config.MaxEventAhead): then no event the contract let
	// through is refused here.
	MaxEventAhead time.Duration
	// Logger receives unparseable-row reports and state warnings
	// (slog.Default() when nil).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.WatermarkDelay <= 0 {
		c.WatermarkDelay = DefaultWatermarkDelay
	}
	if c.MaxDeltaChain <= 0 {
		c.MaxDeltaChain = DefaultMaxDeltaChain
	}
	if c.RecoverTimeout <= 0 {
		c.RecoverTimeout = DefaultRecoverTimeout
	}
	if c.MaxEventAhead <= 0 {
		c.MaxEventAhead = recentchange.DefaultMaxAhead
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
