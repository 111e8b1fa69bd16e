package sessions

import (
	"log/slog"
	"time"
)

// Defaults filled in for zero Config fields.
const (
	// DefaultSessionGap is the inactivity that ends a session.
	DefaultSessionGap = 30 * time.Minute
	// DefaultWatermarkDelay is how far the watermark trails the newest event
	// time seen (the same default as silver's).
	DefaultWatermarkDelay = 10 * time.Minute
	// DefaultMaxDeltaChain bounds how many state versions in a row may be
	// saved as deltas before a full snapshot is written. Keep it well below
	// the stream's RetainBatches (NewQuery clamps it to half of that), or a
	// purge could remove the snapshot a delta chain starts from.
	DefaultMaxDeltaChain = 20
	// QueryName is the query's name (checkpoint, table marker, progress).
	QueryName = "sessions"
)

// Config configures the sessions query.
type Config struct {
	// SessionGap ends a session after this much inactivity (DefaultSessionGap).
	SessionGap time.Duration
	// WatermarkDelay is the allowed lateness (DefaultWatermarkDelay).
	WatermarkDelay time.Duration
	// MaxDeltaChain bounds the delta versions between full state snapshots
	// (DefaultMaxDeltaChain). 1 writes a full snapshot every batch.
	MaxDeltaChain int
	// Logger receives state warnings (slog.Default() when nil).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.SessionGap <= 0 {
		c.SessionGap = DefaultSessionGap
	}
	if c.WatermarkDelay <= 0 {
		c.WatermarkDelay = DefaultWatermarkDelay
	}
	if c.MaxDeltaChain <= 0 {
		c.MaxDeltaChain = DefaultMaxDeltaChain
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
