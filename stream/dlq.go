package stream

import (
	"fmt"

	"lakehouse/broker"
	"lakehouse/table"
)

// DLQ query defaults.
const (
	// DLQQuery is the dead-letter query's name: its checkpoint directory
	// and the key of its marker in bronze.recentchange_dlq.
	DLQQuery = "dlq"
	// DLQTopic is the broker topic it reads (ingest's dead-letter topic).
	DLQTopic = "recentchange.dlq"
)

// DLQHeaders maps the dead-letter table's columns to the headers ingest
// writes on every dead letter (ingest.HeaderReason, HeaderSourceID,
// HeaderSourceURL).
var DLQHeaders = map[string]string{"reason": "dlq.reason", "source_id": "source.id", "source_url": "source.url"}

// NewDLQ builds the dead-letter query: every partition of the DLQ topic of
// log, landed in table.BronzeDLQ (raw bytes, reason, source position,
// broker partition, offset and time, ingest time) with the same protocol
// as bronze, so every dead-letter offset becomes exactly one row; progress
// goes to table.StreamProgress. cfg.Name defaults to DLQQuery; the caller
// must have run lake.EnsureTables.
func NewDLQ(log broker.Log, lake *table.Lake, cfg Config) (*Query, error) {
	if cfg.Name == "" {
		cfg.Name = DLQQuery
	}
	src := NewBrokerSource(log, DLQTopic, table.BronzeDLQSchema)
	src.Headers = DLQHeaders
	q, err := New(cfg, src, nil, &TableSink{Lake: lake, Table: table.BronzeDLQ, TimeColumn: "broker_ts"}, NewTableProgress(lake))
	if err != nil {
		return nil, fmt.Errorf("new dlq query: %w", err)
	}
	return q, nil
}
