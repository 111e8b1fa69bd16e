package main

import (
	"context"

	"lakehouse/broker"
	"lakehouse/internal/localapi"
	"lakehouse/table"
)

// live returns the appliance running on c.data, reached through its local
// endpoint (nil, nil: none runs; app_local.go serves it).
func (c *common) live(ctx context.Context) (*localapi.Client, error) {
	return localapi.Dial(ctx, c.data)
}

// openReaders opens what a read-only command reads: the broker (when
// wantBroker) and the lake (when wantLake), through the appliance running
// on c.data when there is one and it holds the embedded file, else the
// files themselves (read-only). live is that appliance (nil: none).
func (c *common) openReaders(ctx context.Context, warehouse string, wantBroker, wantLake bool) (db broker.Log, lake *table.Lake, live *localapi.Client, err error) {
	if live, err = c.live(ctx); err != nil {
		return nil, nil, nil, err
	}
	if wantBroker {
		if live.Holds("broker") && !c.kafkaBroker() {
			db, err = live.Broker(ctx)
		} else {
			db, err = c.openBrokerExisting(ctx, true)
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	if wantLake {
		if live.Holds("catalog") && c.catalog == "" {
			// The appliance's catalog, read-only over REST.
			c.catalog, c.catalogToken = live.Catalog()
			c.catalogWarehouse, c.catalogSigV4 = "", ""
		}
		if lake, err = table.Open(ctx, c.readOnlyTableConfig(warehouse)); err == nil && live == nil {
			// A running appliance upgraded the tables as it started.
			if err = lake.PendingUpgrades(ctx); err != nil {
				lake.Close()
				err = &olderLakeError{data: c.data, err: err}
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
