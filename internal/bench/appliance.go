package bench

import (
	"context"
	"log/slog"
	"time"

	"lakehouse/ingest"
	"lakehouse/internal/appliance"
)

// Settings are what a phase asks of the appliance it starts.
type Settings struct {
	DataDir     string        // a fresh data directory
	Source      string        // the replay server's stream URL
	Trigger     time.Duration // bronze's trigger
	MaxOffsets  int64         // bronze's batch cap
	HoldHistory []string      // tables whose snapshots expiry must keep (the phase reads them after)
}

// openAppliance opens the appliance a phase runs and measures: the wiring
// `run` uses (internal/appliance), quiet, on the phase's settings. The
// settings it leaves at zero turn the marts' refresh, broker retention and
// the disk reserve off (maintenance still runs): a phase measures the
// streams.
func openAppliance(ctx context.Context, s Settings) (*appliance.Appliance, error) {
	cfg := appliance.Config{Store: appliance.Store{Data: s.DataDir}, Source: s.Source, UserAgent: ingest.DefaultUserAgent,
		Partitions: ingest.DefaultPartitions, Trigger: s.Trigger, MaxOffsetsPerTrigger: s.MaxOffsets,
		CheckpointLoss: "rebuild", Watermark: 10 * time.Minute, SessionGap: 30 * time.Minute,
		HoldHistory: s.HoldHistory}
	return appliance.Open(ctx, cfg, slog.New(slog.DiscardHandler))
}

// Options are what every phase of a run shares.
type Options struct {
	Keep       bool   // keep each phase's data directory
	MaxOffsets int64  // bronze's batch cap in every phase
	ProfileDir string // when set, each phase's CPU profile and heap profile are written here
}
