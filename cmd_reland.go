package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"lakehouse/internal/appliance"
	"lakehouse/stream"
	"lakehouse/table"
)

func init() {
	register(&command{name: "reland", summary: "re-land bronze rows whose data files are missing, from the broker, exactly once (--dry-run: only say what); the appliance must be stopped", run: runReland})
}

// runReland checks every live bronze data file and, where some are
// missing, re-lands their rows from the broker in one replace snapshot
// (stream.RelandBronze). It needs both files' locks, so it refuses while
// the appliance runs.
func runReland(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reland", stderr)
	var c appliance.Store
	registerStore(fs, &c)
	warehouse := fs.String("warehouse", os.Getenv("LAKEHOUSE_WAREHOUSE"), "table storage (default <data>/warehouse)")
	dry := fs.Bool("dry-run", false, "say what is missing and what would be re-landed; change nothing")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	db, err := c.OpenBrokerExisting(ctx, true)
	if err != nil {
		return err
	}
	defer db.Close()
	cfg := c.TableConfig(*warehouse)
	cfg.ReadOnly = *dry
	lake, err := table.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer lake.Close()
	if err := lake.PendingUpgrades(ctx); err != nil {
		return &appliance.OlderLakeError{Data: c.Data, Err: err} // reland reads bronze by its current column names
	}
	var r stream.Reland
	if *dry {
		r, err = stream.PlanReland(ctx, db, lake)
	} else {
		r, err = stream.RelandBronze(ctx, db, lake)
	}
	ch := r.Check
	fmt.Fprintf(stdout, "%s: %d live data files (%d rows) at snapshot %d; %d missing (%d rows)\n",
		table.Bronze, ch.Files, ch.Rows, ch.Snapshot, len(ch.Missing), ch.MissingRows())
	for _, m := range ch.Missing {
		fmt.Fprintf(stdout, "  missing %s (%d rows)\n", m.Path, m.Rows)
	}
	if err != nil {
		if errors.Is(err, stream.ErrCannotReland) {
			return fmt.Errorf("%w; nothing was changed", err)
		}
		return err
	}
	if len(ch.Missing) == 0 {
		fmt.Fprintln(stdout, "nothing to re-land")
		return nil
	}
	var runs []string
	for _, run := range r.Runs {
		runs = append(runs, fmt.Sprintf("%d:[%d,%d)", run.Partition, run.From, run.To))
	}
	if *dry {
		fmt.Fprintf(stdout, "would re-land %d rows from the broker: partition:[offsets) %s\n", r.Rows, strings.Join(runs, " "))
		return nil
	}
	fmt.Fprintf(stdout, "re-landed %d rows from the broker in snapshot %d: partition:[offsets) %s\n", r.Rows, r.Snapshot, strings.Join(runs, " "))
	return nil
}
