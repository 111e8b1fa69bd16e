package silver

import (
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
	if cfg.IntakeColumn == "" {
		cfg.IntakeColumn = "broker_ts" // bronze's: when the appliance took the event in
	}
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, nil, fmt.Errorf("new silver query: %w", err)
	}
	if scfg.Logger == nil {
		scfg.Logger = cfg.Logger
	}
	scfg = scfg.withDefaults()
	scfg.MaxDeltaChain = max(1, min(scfg.MaxDeltaChain, cfg.RetainBatches/2))
	proc := NewProcessor(scfg)
	proc.f.lake, proc.f.query = lake, cfg.Name
	sink := lakeio.NewSink(lake, table.SilverEdits, proc.Props)
	sink.TimeColumn = "intake_time" // event time: commit time minus when Wikimedia took the event in
	q, err := stream.New(cfg, lakeio.NewSource(lake, table.Bronze), proc, sink, stream.NewTableProgress(lake))
	if err != nil {
		return nil, nil, fmt.Errorf("new silver query: %w", err)
	}
	return q, proc, nil
}
