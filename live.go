package main

import (
	"context"

	"lakehouse/broker"
	"lakehouse/internal/appliance"
	"lakehouse/internal/localapi"
	"lakehouse/table"
)

// openReaders opens what a read-only command reads: the broker (when
// wantBroker) and the lake (when wantLake), through the appliance running
// on c.data when there is one and it holds the embedded file, else the
// files themselves (read-only). live is that appliance (nil: none).
func openReaders(ctx context.Context, c *appliance.Store, warehouse string, wantBroker, wantLake bool) (db broker.Log, lake *table.Lake, live *localapi.Client, err error) {
	if live, err = localapi.Dial(ctx, c.Data); err != nil {
		return nil, nil, nil, err
	}
	if wantBroker {
		if live.Holds("broker") && !c.Kafka() {
			db, err = live.Broker(ctx)
		} else {
			db, err = openBrokerExisting(ctx, c, true)
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
			// A running appliance upgraded the tables as it started.
			if err = lake.PendingUpgrades(ctx); err != nil {
				lake.Close()
				err = &olderLakeError{data: c.Data, err: err}
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
