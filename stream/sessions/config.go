package sessions

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"lakehouse/stream/lakeio"
	"lakehouse/table"
)

// Defaults filled in for zero Config fields.
const (
	// DefaultSessionGap is the inactivity that ends a session.
	DefaultSessionGap = 30 * time.Minute
	// DefaultMaxSessionLength is the longest a session may last, from its
	// first edit to its last: an editor active for longer gets consecutive
	// sessions. Four hours is longer than a person's run of edits usually
	// lasts, so it splits mostly the round-the-clock activity of bots,
	// whose one endless session would otherwise never be emitted and whose
	// open pages would grow without bound in state; and it stays far above
	// the watermark delay, which exact splitting needs (see Config).
	DefaultMaxSessionLength = 4 * time.Hour
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

// Reads is what sessions read (silver's appends) and where their marker
// says how far: maintenance never expires a silver snapshot sessions have
// not read.
var Reads = lakeio.Reader{Source: table.SilverEdits, Sink: table.EditorSessions, Query: QueryName}

// Config configures the sessions query.
type Config struct {
	// SessionGap ends a session after this much inactivity (DefaultSessionGap).
	SessionGap time.Duration
	// MaxSessionLength is the longest a session may last
	// (DefaultMaxSessionLength; negative: no maximum). Walking an editor's
	// edits in event time, an edit more than MaxSessionLength after the
	// first edit of its session starts the next session, even within the
	// gap. It must exceed WatermarkDelay (NewQuery refuses it otherwise):
	// the split is then exact, whatever the batching (see state.add).
	MaxSessionLength time.Duration
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
	if c.MaxSessionLength == 0 {
		c.MaxSessionLength = DefaultMaxSessionLength
	}
	if c.MaxDeltaChain <= 0 {
		c.MaxDeltaChain = DefaultMaxDeltaChain
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// maxLength is MaxSessionLength in microseconds, math.MaxInt64 for none.
func (c Config) maxLength() int64 {
	if c.MaxSessionLength < 0 {
		return math.MaxInt64
	}
	return c.MaxSessionLength.Microseconds()
}

// validate reports a configuration (with defaults) the query cannot run.
func (c Config) validate() error {
	if c.MaxSessionLength > 0 && c.MaxSessionLength <= c.WatermarkDelay {
		return fmt.Errorf("sessions: maximum session length %s must exceed the watermark delay %s", c.MaxSessionLength, c.WatermarkDelay)
	}
	return nil
}
