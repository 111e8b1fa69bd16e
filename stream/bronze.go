package stream

import (
	"context"
	"fmt"

	"lakehouse/broker"
	"lakehouse/table"
)

// Bronze query defaults.
const (
	// BronzeQuery is the bronze query's name: its checkpoint directory and
	// the key of its marker in bronze.recentchange.
	BronzeQuery = "bronze"
	// BronzeTopic is the broker topic bronze reads.
	BronzeTopic = "recentchange"
)

// NewBronze builds the bronze query: every partition of the recentchange
// topic of log, landed raw (broker_partition, broker_offset, broker_ts, key,
// value, ingest_ts) in table.Bronze, with progress in table.StreamProgress. No
// dedup happens in bronze: every broker offset becomes exactly one row.
// cfg.Name defaults to BronzeQuery; cfg.CheckpointDir or cfg.DataDir must be
// set. The caller must have run lake.EnsureTables.
func NewBronze(log broker.Log, lake *table.Lake, cfg Config) (*Query, error) {
	if cfg.Name == "" {
		cfg.Name = BronzeQuery
	}
	src := NewBrokerSource(log, BronzeTopic, table.BronzeSchema)
	q, err := New(cfg, src, nil, &TableSink{Lake: lake, Table: table.Bronze, TimeColumn: "broker_ts"}, NewTableProgress(lake))
	if err != nil {
		return nil, fmt.Errorf("new bronze query: %w", err)
	}
	return q, nil
}

// RunBronze runs the bronze query until ctx is done; it returns nil after
// finishing or abandoning the current batch cleanly (see Query.Run).
func RunBronze(ctx context.Context, log broker.Log, lake *table.Lake, cfg Config) error {
	q, err := NewBronze(log, lake, cfg)
	if err != nil {
		return err
	}
	return q.Run(ctx)
}
