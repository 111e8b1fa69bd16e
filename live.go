package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"time"

	"lakehouse/broker"
	"lakehouse/broker/remote"
	"lakehouse/table"
)

// liveAppliance is an appliance running on a command's data directory,
// reached through its local endpoint (app_local.go).
type liveAppliance struct {
	info   localInfo
	client *http.Client
}

// live returns the appliance running on c.data if one answers at the
// address its appliance.json gives (nil, nil: none runs, and the command
// opens the files itself). A file left by an appliance that was killed
// names a process that is gone, or an address nobody answers at.
func (c *common) live(ctx context.Context) (*liveAppliance, error) {
	info, err := readLocalInfo(c.data)
	if err != nil {
		return nil, nil
	}
	if err := syscall.Kill(info.PID, 0); errors.Is(err, syscall.ESRCH) {
		return nil, nil // left by a process that is gone
	}
	a := &liveAppliance{info: info, client: &http.Client{Timeout: 0}}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := a.do(pctx, http.MethodGet, localBrokerPath+"/topics", nil); err != nil {
		return nil, nil // not answering (starting, stopping): the files decide
	}
	return a, nil
}

// holds reports whether the appliance holds the embedded file ("broker",
// "catalog") a command would otherwise open.
func (a *liveAppliance) holds(file string) bool {
	return a != nil && slices.Contains(a.info.Embedded, file)
}

// do sends one request to the local endpoint and returns the body of a 2xx
// answer.
func (a *liveAppliance) do(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		js, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.info.URL+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.info.Token)
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("appliance at %s: %w", a.info.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("appliance at %s: %w", a.info.URL, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("appliance at %s: %s %s: %s: %s", a.info.URL, method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// broker is the appliance's embedded broker, read through its endpoint.
func (a *liveAppliance) broker(ctx context.Context) (broker.Log, error) {
	return remote.Dial(ctx, a.info.URL+localBrokerPath, a.info.Token)
}

// useCatalog points c's lake at the appliance's catalog (read-only REST).
func (a *liveAppliance) useCatalog(c *common) {
	c.catalog = restScheme + a.info.URL + icebergPath
	c.catalogToken = a.info.Token
	c.catalogWarehouse, c.catalogSigV4 = "", ""
}

const restScheme = "rest+"

// lease pins the current snapshot of each table in the appliance for ttl
// (table.Lease); release ends it (best effort: the lease also ends by
// itself).
func (a *liveAppliance) lease(ctx context.Context, tables []string, ttl time.Duration) (table.Lease, func(), error) {
	b, err := a.do(ctx, http.MethodPost, localLeasePath, map[string]any{"tables": tables, "ttl": ttl.String()})
	if err != nil {
		return table.Lease{}, nil, fmt.Errorf("lease the tables' snapshots: %w", err)
	}
	var ls table.Lease
	if err := json.Unmarshal(b, &ls); err != nil {
		return table.Lease{}, nil, fmt.Errorf("lease the tables' snapshots: %w", err)
	}
	return ls, func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = a.do(rctx, http.MethodDelete, localLeasePath+"/"+ls.ID, nil)
	}, nil
}

// openReaders opens what a read-only command reads: the broker (when
// wantBroker) and the lake (when wantLake), through the appliance running
// on c.data when there is one and it holds the embedded file, else the
// files themselves (read-only). live is that appliance (nil: none).
func (c *common) openReaders(ctx context.Context, warehouse string, wantBroker, wantLake bool) (db broker.Log, lake *table.Lake, live *liveAppliance, err error) {
	if live, err = c.live(ctx); err != nil {
		return nil, nil, nil, err
	}
	if wantBroker {
		if live.holds("broker") && !c.kafkaBroker() {
			db, err = live.broker(ctx)
		} else {
			db, err = c.openBrokerExisting(ctx, true)
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	if wantLake {
		if live.holds("catalog") && c.catalog == "" {
			live.useCatalog(c)
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
