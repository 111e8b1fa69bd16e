package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/humanize"
	"lakehouse/marts"
)

// startSource starts the demo's replay server (f.Source becomes its
// address) and says what it plays.
func startSource(f *appliance.Config, stdout io.Writer, events, loops int, rate float64, span time.Duration) (*replay.Server, error) {
	src, url, err := replay.Demo("127.0.0.1:0", 1, events, loops, rate, span)
	if err != nil {
		return nil, fmt.Errorf("start replay server: %w", err)
	}
	counts := src.Counts()
	f.Source = url
	fmt.Fprintf(stdout, "demo: replaying %d events (%d loops of %d, plus %d contract violations and %d canaries) from %s\n",
		counts.Events, counts.Loops, events, counts.Violations, counts.Canaries, url)
	if span > 0 {
		fmt.Fprintf(stdout, "demo: event times spread over the last %s, in order, the newest now: none late; sessions that ended before the last %s (gap + watermark) close\n",
			span, f.SessionGap+f.Watermark)
	}
	return src, nil
}

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

// nextEdit is one generated edit (silver keeps it, so sessions runs a
// batch for it), to be stamped when it is sent.
func nextEdit() replay.Recording {
	rec := replay.Generate(2, 50)
	for _, ev := range rec.Events {
		var m struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(ev, &m) == nil && m.Type == "edit" {
			return replay.Recording{Events: [][]byte{ev}}
		}
	}
	panic("no edit among 50 generated events")
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
