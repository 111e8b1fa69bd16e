package appliance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"lakehouse/stream"
	"lakehouse/table"
)

// Reland checks every live bronze data file of the lake in c.Data and,
// where some are missing, re-lands their rows from the broker in one
// replace snapshot (stream.RelandBronze); dry only says what it would do.
// It writes what it found and did to w. It needs both files' locks, so it
// fails while the appliance runs.
func (c *Store) Reland(ctx context.Context, warehouse string, dry bool, w io.Writer) error {
	db, err := c.OpenBrokerExisting(ctx, true)
	if err != nil {
		return err
	}
	defer db.Close()
	cfg := c.TableConfig(warehouse)
	cfg.ReadOnly = dry
	lake, err := table.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer lake.Close()
	if err := lake.PendingUpgrades(ctx); err != nil {
		return &OlderLakeError{Data: c.Data, Err: err} // reland reads bronze by its current column names
	}
	var r stream.Reland
	if dry {
		r, err = stream.PlanReland(ctx, db, lake)
	} else {
		r, err = stream.RelandBronze(ctx, db, lake)
	}
	ch := r.Check
	fmt.Fprintf(w, "%s: %d live data files (%d rows) at snapshot %d; %d missing (%d rows)\n",
		table.Bronze, ch.Files, ch.Rows, ch.Snapshot, len(ch.Missing), ch.MissingRows())
	for _, m := range ch.Missing {
		fmt.Fprintf(w, "  missing %s (%d rows)\n", m.Path, m.Rows)
	}
	if err != nil {
		if errors.Is(err, stream.ErrCannotReland) {
			return fmt.Errorf("%w; nothing was changed", err)
		}
		return err
	}
	if len(ch.Missing) == 0 {
		fmt.Fprintln(w, "nothing to re-land")
		return nil
	}
	var runs []string
	for _, run := range r.Runs {
		runs = append(runs, fmt.Sprintf("%d:[%d,%d)", run.Partition, run.From, run.To))
	}
	if dry {
		fmt.Fprintf(w, "would re-land %d rows from the broker: partition:[offsets) %s\n", r.Rows, strings.Join(runs, " "))
		return nil
	}
	fmt.Fprintf(w, "re-landed %d rows from the broker in snapshot %d: partition:[offsets) %s\n", r.Rows, r.Snapshot, strings.Join(runs, " "))
	return nil
}
