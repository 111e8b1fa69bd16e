package bench

import (
	"context"
	"time"

	"lakehouse/broker"
	"lakehouse/internal/observe"
	"lakehouse/table"
)

// Appliance is the whole appliance a phase runs and measures: package
// internal/appliance (ingest, the streams, the marts), opened by a Start.
type Appliance interface {
	// Run runs the appliance until ctx ends.
	Run(ctx context.Context) error
	// Status is the broker's counts and the named queries' lags.
	Status(ctx context.Context, queries ...string) observe.Status
	Lake() *table.Lake
	Broker() broker.Log
	Close() error
}

// Settings are what a phase asks of the appliance it starts.
type Settings struct {
	DataDir     string        // a fresh data directory
	Source      string        // the replay server's stream URL
	Trigger     time.Duration // bronze's trigger
	MaxOffsets  int64         // bronze's batch cap
	HoldHistory []string      // tables whose snapshots expiry must keep (the phase reads them after)
}

// Start opens the appliance a phase runs.
type Start func(ctx context.Context, s Settings) (Appliance, error)

// Options are what every phase of a run shares.
type Options struct {
	Start      Start
	Keep       bool   // keep each phase's data directory
	MaxOffsets int64  // bronze's batch cap in every phase
	ProfileDir string // when set, each phase's CPU profile and heap profile are written here
}
