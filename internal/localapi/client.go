package localapi

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

// Client is an appliance running on a command's data directory, reached
// through its local endpoint.
type Client struct {
	info   Info
	client *http.Client
}

// Dial returns the appliance running on data if one answers at the
// address its appliance.json gives (nil, nil: none runs, and the command
// opens the files itself). A file left by an appliance that was killed
// names a process that is gone, or an address nobody answers at.
func Dial(ctx context.Context, data string) (*Client, error) {
	info, err := ReadInfo(data)
	if err != nil {
		return nil, nil
	}
	if err := syscall.Kill(info.PID, 0); errors.Is(err, syscall.ESRCH) {
		return nil, nil // left by a process that is gone
	}
	a := &Client{info: info, client: &http.Client{Timeout: 0}}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := a.do(pctx, http.MethodGet, BrokerPath+"/topics", nil); err != nil {
		return nil, nil // not answering (starting, stopping): the files decide
	}
	return a, nil
}

// Info is the appliance's appliance.json.
func (a *Client) Info() Info { return a.info }

// Holds reports whether the appliance holds the embedded file ("broker",
// "catalog") a command would otherwise open (false for no appliance).
func (a *Client) Holds(file string) bool {
	return a != nil && slices.Contains(a.info.Embedded, file)
}

// do sends one request to the local endpoint and returns the body of a 2xx
// answer.
func (a *Client) do(ctx context.Context, method, path string, body any) ([]byte, error) {
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

// Broker is the appliance's embedded broker, read through its endpoint.
func (a *Client) Broker(ctx context.Context) (broker.Log, error) {
	return remote.Dial(ctx, a.info.URL+BrokerPath, a.info.Token)
}

// Catalog is the appliance's catalog as a REST catalog URI
// (rest+http://...) and its bearer token: read-only.
func (a *Client) Catalog() (uri, token string) {
	return "rest+" + a.info.URL + IcebergPath, a.info.Token
}

// Lease pins the current snapshot of each table in the appliance for ttl
// (table.Lease); release ends it (best effort: the lease also ends by
// itself).
func (a *Client) Lease(ctx context.Context, tables []string, ttl time.Duration) (table.Lease, func(), error) {
	b, err := a.do(ctx, http.MethodPost, LeasePath, map[string]any{"tables": tables, "ttl": ttl.String()})
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
		_, _ = a.do(rctx, http.MethodDelete, LeasePath+"/"+ls.ID, nil)
	}, nil
}
