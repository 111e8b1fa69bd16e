package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"lakehouse/internal/appliance"
	"lakehouse/internal/humanize"
	"lakehouse/marts"
)

// printLake says where the demo's lake is and how to look at it.
func printLake(stdout io.Writer, data, self string) {
	abs, _ := filepath.Abs(data)
	fmt.Fprintf(stdout, `
demo: the lake is in %s
  look at it:   %[2]s topics --data %[1]s
                %[2]s verify --data %[1]s
                %[2]s query --data %[1]s "SELECT wiki, count(*) AS edits FROM silver.edits GROUP BY wiki ORDER BY edits DESC LIMIT 5"
`, humanize.ShellJoin([]string{abs}), self)
}

// summary refreshes the gold marts once and prints what they hold. It
// returns the refresh's error (ErrChecksFailed naming the checks that
// failed, after printing every check and the summary) or the summary's.
func summary(ctx context.Context, p *appliance.Appliance, w io.Writer) error {
	_, m := p.Components()
	rep, err := m.Refresh(ctx)
	if err != nil && !errors.Is(err, marts.ErrChecksFailed) {
		return err
	}
	for _, c := range rep.Checks {
		fmt.Fprintf(w, "demo: asset check %s\n", c)
	}
	if serr := m.Summary(ctx, w); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}
