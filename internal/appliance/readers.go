package appliance

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
	"lakehouse/internal/localapi"
	"lakehouse/table"
)

// NoBrokerError: a command that needs an existing broker found none at
// Path (a data directory nothing has run on).
type NoBrokerError struct {
	Path string
	Err  error
}

func (e *NoBrokerError) Error() string {
	if errors.Is(e.Err, fs.ErrNotExist) {
		return "no broker at " + e.Path
	}
	return "no broker at " + e.Path + ": " + e.Err.Error()
}
func (e *NoBrokerError) Unwrap() error { return e.Err }

// OlderLakeError: a command that only reads found tables an older version
// wrote, which Open upgrades as the appliance starts (table.ErrOlderFormat).
type OlderLakeError struct {
	Data string
	Err  error
}

func (e *OlderLakeError) Error() string { return "the lake in " + e.Data + " was " + e.Err.Error() }
func (e *OlderLakeError) Unwrap() error { return e.Err }

// OpenBrokerExisting opens the broker only if it already exists, so that
// a command never creates an empty lake by accident (a *NoBrokerError
// otherwise); readOnly opens the embedded one without ever writing to it
// (commands that only read). A Kafka cluster exists if it answers; its
// topics are checked by the command's first read.
func (c *Store) OpenBrokerExisting(ctx context.Context, readOnly bool) (broker.Log, error) {
	if c.Kafka() {
		return c.OpenKafka(ctx, func(cfg *kafka.Config) { cfg.ReadOnly = readOnly })
	}
	if _, err := os.Stat(c.BrokerPath()); err != nil {
		return nil, &NoBrokerError{Path: c.BrokerPath(), Err: err}
	}
	return broker.Open(c.BrokerPath(), broker.Options{ReadOnly: readOnly})
}

// OpenReaders opens what a read-only command reads: the broker (when
// wantBroker) and the lake (when wantLake), through the appliance running
// on c.Data when there is one and it holds the embedded file, else the
// files themselves (read-only). live is that appliance (nil: none). A lake
// an older version wrote is an *OlderLakeError when no appliance runs (a
// running one upgraded it as it started).
func (c *Store) OpenReaders(ctx context.Context, warehouse string, wantBroker, wantLake bool) (db broker.Log, lake *table.Lake, live *localapi.Client, err error) {
	if live, err = localapi.Dial(ctx, c.Data); err != nil {
		return nil, nil, nil, err
	}
	if wantBroker {
		if live.Holds("broker") && !c.Kafka() {
			db, err = live.Broker(ctx)
		} else {
			db, err = c.OpenBrokerExisting(ctx, true)
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	if wantLake {
		if live.Holds("catalog") && c.Catalog == "" {
			// The appliance's catalog, read-only over REST.
			c.Catalog, c.CatalogToken = live.Catalog()
			c.CatalogWarehouse, c.CatalogSigV4 = "", ""
		}
		if lake, err = table.Open(ctx, c.ReadOnlyTableConfig(warehouse)); err == nil && live == nil {
			if err = lake.PendingUpgrades(ctx); err != nil {
				lake.Close()
				err = &OlderLakeError{Data: c.Data, Err: err}
			}
		}
		if err != nil {
			if db != nil {
				db.Close()
			}
			return nil, nil, nil, err
		}
	}
	return db, lake, live, nil
}

// leaseTables has live, the appliance running beside a reader, keep the
// current snapshot of every table in lake (and its files) for ttl; release
// ends the lease.
func leaseTables(ctx context.Context, live *localapi.Client, lake *table.Lake, ttl time.Duration) (ls table.Lease, release func(), err error) {
	idents, err := lake.Tables(ctx)
	if err != nil {
		return ls, nil, err
	}
	return live.Lease(ctx, idents, ttl)
}
