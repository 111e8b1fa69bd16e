package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"lakehouse/internal/appliance"
	"lakehouse/table"
)

func init() {
	register(&command{name: "catalog", summary: "list the catalog entries the appliance does not accept (a client table under a second warehouse root, or with its metadata in a refused place); --drop NAME drops one; the appliance must be stopped", run: runCatalog})
}

// runCatalog lists the odd entries of catalog.db (table.Lake.OddTables)
// and drops those named with --drop (the entry only: files stay). It
// needs catalog.db's lock, so it refuses while the appliance runs; a
// running appliance shows the same list on /readyz and in `status`, and a
// client can drop its table through REST.
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
	cfg := c.ReadOnlyTableConfig(*warehouse)
	if len(drop) > 0 {
		cfg = c.TableConfig(*warehouse)
	}
	lake, err := table.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer lake.Close()
	for _, name := range drop {
		if err := lake.DropOdd(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "dropped %s (its files stay where they are)\n", name)
	}
	odd, err := lake.OddTables(ctx)
	if err != nil {
		return err
	}
	if len(odd) == 0 {
		fmt.Fprintln(stdout, "no odd entries: the appliance accepts every table in the catalog")
		return nil
	}
	for _, o := range odd {
		fmt.Fprintf(stdout, "%s\t%s\n\tmetadata %s\n", o.Name, o.Reason, o.MetadataLocation)
	}
	fmt.Fprintln(stdout, "drop one with: lakehouse catalog --drop NAME (with the appliance stopped)")
	return nil
}
