package sessions

import (
	"fmt"

	"lakehouse/stream"
	"lakehouse/stream/lakeio"
	"lakehouse/table"
)

// NewQuery builds the sessions query on lake: committed silver.edits
// snapshots in, silver.editor_sessions out, progress rows to
// ops.stream_progress. cfg.Name defaults to QueryName. The tables must exist.
// scfg.MaxDeltaChain is clamped to half of cfg.RetainBatches, so that the
// checkpoint purge never removes the full snapshot a kept delta needs.
func NewQuery(lake *table.Lake, cfg stream.Config, scfg Config) (*stream.Query, *Processor, error) {
	if cfg.Name == "" {
		cfg.Name = QueryName
	}
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, nil, fmt.Errorf("new sessions query: %w", err)
	}
	if scfg.Logger == nil {
		scfg.Logger = cfg.Logger
	}
	scfg = scfg.withDefaults()
	if err := scfg.validate(); err != nil {
		return nil, nil, fmt.Errorf("new sessions query: %w", err)
	}
	scfg.MaxDeltaChain = max(1, min(scfg.MaxDeltaChain, cfg.RetainBatches/2))
	proc := NewProcessor(scfg)
	q, err := stream.New(cfg, lakeio.NewSource(lake, table.SilverEdits), proc,
		lakeio.NewSink(lake, table.EditorSessions, proc.Props), stream.NewTableProgress(lake))
	if err != nil {
		return nil, nil, fmt.Errorf("new sessions query: %w", err)
	}
	return q, proc, nil
}
