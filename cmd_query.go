package main

import (
	"context"
	"flag"
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
	sf := registerSession(fs, "query")
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
	q := appliance.ReadQuery{Warehouse: *sf.warehouse, SQL: pos[0], Format: *sf.format, Memory: *sf.memory, Timeout: *sf.timeout}
	if err := refused(q.Check()); err != nil {
		return err
	}
	if err := needLake(c); err != nil {
		return err
	}
	return c.Query(ctx, q, stdout)
}

// sessionFlags are the flags of a command that reads the lake in a DuckDB
// session of its own (query, model test): where the tables are, how rows
// print, and the session's bounds.
type sessionFlags struct {
	warehouse, format, memory *string
	timeout                   *time.Duration
}

// registerSession registers the sessionFlags on fs; what names the work
// in their help ("query", "trial").
func registerSession(fs *flag.FlagSet, what string) sessionFlags {
	return sessionFlags{
		warehouse: fs.String("warehouse", os.Getenv("LAKEHOUSE_WAREHOUSE"), "table storage (default <data>/warehouse)"),
		format:    fs.String("format", marts.FormatTable, "format of the rows printed: table, csv or json"),
		timeout:   fs.Duration("timeout", appliance.DefaultQueryTimeout, "stop the "+what+" after this long"),
		memory:    fs.String("memory", marts.DefaultQueryMemory, "DuckDB's memory limit for the "+what+"; past it the "+what+" spills to a temporary directory"),
	}
}

// needLake refuses a data directory that does not exist, saying how to
// make one.
func needLake(c appliance.Store) error {
	if _, err := os.Stat(c.Data); err != nil {
		return fmt.Errorf("no lake at %s (run `%s demo` first, or pass --data): %w", c.Data, self(), err)
	}
	return nil
}

// quoteAll renders args as Go-quoted strings separated by spaces.
func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}
