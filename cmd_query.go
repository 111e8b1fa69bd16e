package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"lakehouse/marts"
	"lakehouse/table"
)

func init() {
	register(&command{name: "query", summary: `run DuckDB SQL over every table (bronze, silver, gold, ops by dotted name)`, run: runQuery})
}

func runQuery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query", stderr)
	var c common
	c.register(fs)
	warehouse := fs.String("warehouse", os.Getenv("LAKEHOUSE_WAREHOUSE"), "table storage (default <data>/warehouse)")
	format := fs.String("format", marts.FormatTable, "output format: table, csv or json")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: lakehouse query [flags] \"SQL\" [flags]\n\n"+
			"Runs one DuckDB SQL statement, quoted as one argument. Flags may come before\n"+
			"or after it; a statement that starts with \"-\" goes after \"--\".\n\n"+
			"Tables: %s, gold.*, ops.*\n\nFlags:\n", strings.Join(table.Tables, ", "))
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 1:
	case 0:
		fs.Usage()
		return fmt.Errorf("no SQL statement given: %w", errUsage)
	default:
		return fmt.Errorf("want one SQL statement, got %d arguments %s (quote the statement as one argument): %w",
			len(pos), quoteAll(pos), errUsage)
	}
	if _, err := os.Stat(c.data); err != nil {
		return fmt.Errorf("no lake at %s (run `lakehouse demo` first, or pass --data): %w", c.data, err)
	}
	lake, err := table.Open(ctx, c.readOnlyTableConfig(*warehouse))
	if err != nil {
		return err
	}
	defer lake.Close()
	return marts.Query(ctx, lake, pos[0], *format, stdout)
}

// quoteAll renders args as Go-quoted strings separated by spaces.
func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}
