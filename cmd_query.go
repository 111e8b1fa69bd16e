package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"lakehouse/internal/appliance"
	"lakehouse/marts"
	"lakehouse/table"
)

func init() {
	register(&command{name: "query", summary: `run DuckDB SQL over every table (bronze, silver, gold, ops by dotted name)`, run: runQuery})
}

func runQuery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query", stderr)
	var c appliance.Store
	registerStore(fs, &c)
	warehouse := fs.String("warehouse", os.Getenv("LAKEHOUSE_WAREHOUSE"), "table storage (default <data>/warehouse)")
	format := fs.String("format", marts.FormatTable, "output format: table, csv or json")
	timeout := fs.Duration("timeout", defaultQueryTimeout, "stop the query after this long")
	memory := fs.String("memory", marts.DefaultQueryMemory, "DuckDB's memory limit for the query; past it the query spills to a temporary directory")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: lakehouse query [flags] \"SQL\" [flags]\n\n"+
			"Runs one read-only DuckDB SELECT (SHOW TABLES and DESCRIBE too), quoted as one\n"+
			"argument, over the lake's tables; beside a running appliance it reads through\n"+
			"it. Flags may come before or after it; a statement that starts with \"-\" goes\n"+
			"after \"--\".\n\n"+
			"Tables: %s, gold.*, ops.*\n\nFlags:\n", strings.Join(table.Tables, ", "))
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	orDemo(&c, fs, stderr)
	switch len(pos) {
	case 1:
	case 0:
		fs.Usage()
		return fmt.Errorf("no SQL statement given: %w", errUsage)
	default:
		return fmt.Errorf("want one SQL statement, got %d arguments %s (quote the statement as one argument): %w",
			len(pos), quoteAll(pos), errUsage)
	}
	if *timeout <= 0 {
		return fmt.Errorf("--timeout %s: want a positive duration: %w", *timeout, errUsage)
	}
	if *timeout+leaseMargin > table.MaxLease {
		return fmt.Errorf("--timeout %s: at most %s (a query beside the running appliance holds its snapshots' files that long, plus %s): %w",
			*timeout, table.MaxLease-leaseMargin, leaseMargin, errUsage)
	}
	if _, err := os.Stat(c.Data); err != nil {
		return fmt.Errorf("no lake at %s (run `%s demo` first, or pass --data): %w", c.Data, self(), err)
	}
	_, lake, live, err := c.OpenReaders(ctx, *warehouse, false, true)
	if err != nil {
		return err
	}
	defer lake.Close()
	qctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	opt := marts.QueryOptions{MemoryLimit: *memory}
	if live != nil {
		// Beside a running appliance: pin the snapshot of every table for
		// as long as the query may run, and read those.
		idents, err := lake.Tables(ctx)
		if err != nil {
			return err
		}
		ls, release, err := live.Lease(ctx, idents, *timeout+leaseMargin)
		if err != nil {
			return err
		}
		defer release()
		opt.Snapshots = ls.Snapshots
	}
	err = marts.Query(qctx, lake, pos[0], *format, stdout, opt)
	if err != nil && errors.Is(qctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("query: stopped after --timeout %s", *timeout)
	}
	return err
}

// leaseMargin is how much longer than its --timeout a query's lease lasts:
// the planning before the timeout starts, and the release after it.
const leaseMargin = time.Minute

// defaultQueryTimeout bounds a query; a query beside a running appliance
// holds its tables' snapshots (and their files) that long at most.
const defaultQueryTimeout = 10 * time.Minute

// quoteAll renders args as Go-quoted strings separated by spaces.
func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}
