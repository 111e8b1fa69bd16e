package silver

import (
	"context"
	"fmt"

	"lakehouse/stream"
	"lakehouse/stream/lakeio"
	"lakehouse/table"
)

// NewQuery builds the silver query on lake: committed bronze.recentchange
// snapshots in, silver.edits out, progress rows (with the late, duplicate
// and unparseable counts) to ops.stream_progress. cfg.Name defaults to
// QueryName. The tables must exist (lake.EnsureTables).
func NewQuery(lake *table.Lake, cfg stream.Config, scfg Config) (*stream.Query, *Processor, error) {
	if cfg.Name == "" {
		cfg.Name = QueryName
	}
	if cfg.CheckpointDir == "" {
		if cfg.DataDir == "" {
			return nil, nil, fmt.Errorf("new silver query: %w", stream.ErrNoCheckpointDir)
		}
		cfg.CheckpointDir = stream.CheckpointPath(cfg.DataDir, cfg.Name)
	}
	retain := cfg.RetainBatches
	if retain <= 0 {
		retain = stream.DefaultRetainBatches
	}
	if scfg.Logger == nil {
		scfg.Logger = cfg.Logger
	}
	scfg = scfg.withDefaults()
	scfg.MaxDeltaChain = max(1, min(scfg.MaxDeltaChain, retain/2))
	cp, err := stream.OpenCheckpoint(cfg.CheckpointDir)
	if err != nil {
		return nil, nil, fmt.Errorf("new silver query: %w", err)
	}
	proc := NewProcessor(scfg, cp)
	proc.lake, proc.query = lake, cfg.Name
	q, err := stream.New(cfg, lakeio.NewSource(lake, table.Bronze), proc,
		lakeio.NewSink(lake, table.SilverEdits, proc.Props), stream.NewTableProgress(lake))
	if err != nil {
		return nil, nil, fmt.Errorf("new silver query: %w", err)
	}
	return q, proc, nil
}

// Run runs the silver query until ctx is done (see stream.Query.Run).
func Run(ctx context.Context, lake *table.Lake, cfg stream.Config, scfg Config) error {
	q, _, err := NewQuery(lake, cfg, scfg)
	if err != nil {
		return err
	}
	return q.Run(ctx)
}
