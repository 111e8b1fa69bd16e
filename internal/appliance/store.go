package appliance

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
	"lakehouse/table"
)

// Store is where an appliance's data lives: the data directory, the
// tables' catalog and the broker. Every command that touches the lake
// shares it; package main fills it from flags and the environment.
type Store struct {
	Data string
	// Catalog, CatalogToken, CatalogWarehouse, CatalogSigV4: an Iceberg
	// REST catalog instead of catalog.db (table.Config's Catalog fields).
	Catalog, CatalogToken, CatalogWarehouse, CatalogSigV4 string
	// BrokerURL: a Kafka cluster (kafka://...) instead of broker.db.
	BrokerURL string
	// S3 holds the object store's settings for an s3:// warehouse (main
	// reads them from the standard AWS variables).
	S3 table.S3Config
}

// BrokerPath is the embedded broker's file.
func (c *Store) BrokerPath() string { return filepath.Join(c.Data, "broker.db") }

// Kafka reports whether BrokerURL names a Kafka cluster rather than the
// embedded <data>/broker.db.
func (c *Store) Kafka() bool { return c.BrokerURL != "" }

// BrokerName is what messages call the broker: the file, or the cluster.
func (c *Store) BrokerName() string {
	if c.Kafka() {
		cfg, err := kafka.ParseURL(c.BrokerURL)
		if err != nil {
			return "the Kafka cluster"
		}
		return "Kafka at " + strings.Join(cfg.Seeds, ",")
	}
	return c.BrokerPath()
}

// checkBroker checks BrokerURL's syntax (an empty one is the embedded file).
func (c *Store) checkBroker(e *Problems) {
	if !c.Kafka() {
		return
	}
	if _, err := kafka.ParseURL(c.BrokerURL); err != nil {
		e.Add("broker", "%v: want kafka://host:port[,host:port...] or kafkas://... for TLS", err)
	}
}

// OpenBroker opens the broker: the embedded log in the data directory
// (created if needed) or the Kafka cluster BrokerURL names. appends says
// whether this process appends (runs ingest): on Kafka only then does it
// register the producer identity, which fences an older producer.
func (c *Store) OpenBroker(ctx context.Context, opts broker.Options, appends bool) (broker.Log, error) {
	if err := os.MkdirAll(c.Data, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	if c.Kafka() {
		return c.OpenKafka(ctx, func(cfg *kafka.Config) { cfg.NoAppend = !appends })
	}
	return broker.Open(c.BrokerPath(), opts)
}

// OpenKafka opens the cluster BrokerURL names, with set's changes to the
// URL's settings.
func (c *Store) OpenKafka(ctx context.Context, set func(*kafka.Config)) (broker.Log, error) {
	cfg, err := kafka.ParseURL(c.BrokerURL)
	if err != nil {
		return nil, fmt.Errorf("--broker: %w", err)
	}
	set(&cfg)
	l, err := kafka.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open broker %s: %w", c.BrokerName(), err)
	}
	return l, nil
}

// TableConfig is the lake's configuration on warehouse ("" for
// <data>/warehouse).
func (c *Store) TableConfig(warehouse string) table.Config {
	return table.Config{
		Dir:              c.Data,
		Warehouse:        warehouse,
		Catalog:          c.Catalog,
		CatalogToken:     c.CatalogToken,
		CatalogWarehouse: c.CatalogWarehouse,
		CatalogSigV4:     c.CatalogSigV4,
		OwnNamespaces:    slices.Sorted(maps.Keys(OwnNamespaces())),
		S3:               c.S3,
	}
}

// ReadOnlyTableConfig is TableConfig for commands that only read: nothing
// is created or written.
func (c *Store) ReadOnlyTableConfig(warehouse string) table.Config {
	cfg := c.TableConfig(warehouse)
	cfg.ReadOnly = true
	return cfg
}
