package main

import (
	"context"
	"io"
	"os"

	"lakehouse/internal/appliance"
)

func init() {
	register(&command{name: "catalog", summary: "list the catalog entries the appliance does not accept (a client table under a second warehouse root, or with its metadata in a refused place); --drop NAME drops one; the appliance must be stopped", run: runCatalog})
}

// runCatalog lists the odd entries of catalog.db and drops those named
// with --drop (appliance.Store.OddTables). It refuses while the appliance
// runs; a client can drop its table through the appliance's REST catalog.
func runCatalog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("catalog", stderr)
	var c appliance.Store
	registerStore(fs, &c)
	warehouse := fs.String("warehouse", os.Getenv("LAKEHOUSE_WAREHOUSE"), "table storage (default <data>/warehouse)")
	var drop []string
	fs.Func("drop", "drop this odd entry, namespace.name as listed (repeatable); a table the appliance accepts is refused", func(v string) error {
		drop = append(drop, v)
		return nil
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return c.OddTables(ctx, *warehouse, drop, stdout)
}
