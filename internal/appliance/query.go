package appliance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"lakehouse/marts"
	"lakehouse/table"
)

// ReadQuery is one statement `lakehouse query` runs over a lake.
type ReadQuery struct {
	Warehouse string // the table storage ("": <data>/warehouse)
	SQL       string
	Format    string // marts.FormatTable, csv or json
	Memory    string // DuckDB's memory limit for the query
	Timeout   time.Duration
}

// DefaultQueryTimeout bounds a query; a query beside a running appliance
// holds its tables' snapshots (and their files) that long at most.
const DefaultQueryTimeout = 10 * time.Minute

// leaseMargin is how much longer than its timeout a query's lease lasts:
// the planning before the timeout starts, and the release after it.
const leaseMargin = time.Minute

// Check refuses a timeout no lease can cover.
func (q ReadQuery) Check() Problems {
	var probs Problems
	probs.Positive("timeout", q.Timeout)
	if q.Timeout+leaseMargin > table.MaxLease {
		probs.Add("timeout", "%s: at most %s (a query beside the running appliance holds its snapshots' files that long, plus %s)",
			q.Timeout, table.MaxLease-leaseMargin, leaseMargin)
	}
	return probs
}

// Query runs q over the lake in c.Data and writes its result to w. Beside
// an appliance running there it reads through it, on the snapshot of every
// table that the appliance leases to it for as long as the query may run.
func (c *Store) Query(ctx context.Context, q ReadQuery, w io.Writer) error {
	_, lake, live, err := c.OpenReaders(ctx, q.Warehouse, false, true)
	if err != nil {
		return err
	}
	defer lake.Close()
	qctx, cancel := context.WithTimeout(ctx, q.Timeout)
	defer cancel()
	opt := marts.QueryOptions{MemoryLimit: q.Memory}
	if live != nil {
		ls, release, err := leaseTables(ctx, live, lake, q.Timeout+leaseMargin)
		if err != nil {
			return err
		}
		defer release()
		opt.Snapshots = ls.Snapshots
	}
	err = marts.Query(qctx, lake, q.SQL, q.Format, w, opt)
	if err != nil && errors.Is(qctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("query: stopped after its timeout, %s", q.Timeout)
	}
	return err
}
