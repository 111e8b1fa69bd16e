package main

import (
	"context"
	"fmt"
	"io"
	"os"
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
		fmt.Fprintf(stderr, "Usage: lakehouse query [flags] \"SQL\"\n\nTables: %s, gold.*, ops.*\n\nFlags:\n", strings.Join(table.Tables, ", "))
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errUsage
	}
	if _, err := os.Stat(c.data); err != nil {
		return fmt.Errorf("no lake at %s (run `lakehouse demo` first, or pass --data): %w", c.data, err)
	}
	lake, err := table.Open(ctx, c.tableConfig(*warehouse))
	if err != nil {
		return err
	}
	defer lake.Close()
	return marts.Query(ctx, lake, fs.Arg(0), *format, stdout)
}
