package main

import (
	"context"
	"io"
	"os"

	"lakehouse/internal/appliance"
)

func init() {
	register(&command{name: "reland", summary: "re-land bronze rows whose data files are missing, from the broker, exactly once (--dry-run: only say what); the appliance must be stopped", run: runReland})
}

// runReland re-lands bronze rows whose data files are missing
// (appliance.Store.Reland). It needs both files' locks, so it refuses
// while the appliance runs.
func runReland(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reland", stderr)
	var c appliance.Store
	registerStore(fs, &c)
	warehouse := fs.String("warehouse", os.Getenv("LAKEHOUSE_WAREHOUSE"), "table storage (default <data>/warehouse)")
	dry := fs.Bool("dry-run", false, "say what is missing and what would be re-landed; change nothing")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return c.Reland(ctx, *warehouse, *dry, stdout)
}
