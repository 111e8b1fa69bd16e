// Package demo runs the appliance offline on a built-in replay of real
// events (`lakehouse demo`): it starts a replay server on loopback, runs
// the appliance against it until every event has landed, refreshes the
// gold marts once and prints what they hold. Package main parses the
// demo's flags into Options and words its errors.
//
// What survives a crash: the demo's data directory holds an appliance's
// lake like any other (internal/appliance says what survives); the next
// demo deletes it, which Marker allows, and starts over.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"lakehouse/ingest"
	"lakehouse/internal/appliance"
)

// Marker marks a data directory the demo created, so a later demo may
// reset it; the demo never deletes a directory without it.
const Marker = ".lakehouse-demo"

// DefaultDir is the demo's data directory when none is chosen.
const DefaultDir = "./lakehouse-demo"

// DefaultSpan is how much past the demo's event times cover: at the demo's
// 4,000 events, 6 hours is about one event every 5 s, a pace at which the
// busiest editors have sessions of an hour or two, and most sessions end
// more than the 40 minutes (gap plus watermark) before now that closing
// them takes; the hourly mart gets 7 hours.
const DefaultSpan = 6 * time.Hour

// Options are one demo's settings.
type Options struct {
	// Config is the appliance's; Run sets its Source to the replay's.
	Config appliance.Config
	Log    *slog.Logger
	// Events in the generated recording, played Loops times at Rate
	// events/s (0: flat out), their times spread over Span of the past
	// ending now (0: stamped when sent).
	Events, Loops int
	Rate          float64
	Span          time.Duration
	// Timeout is how long the pipeline may take to drain.
	Timeout time.Duration
	// Follow keeps the appliance running after the summary until ctx ends.
	Follow bool
	// Hold, when set, is waited on after the summary while the dashboard
	// stays up (a person at a terminal gets to look at it).
	Hold func(ctx context.Context, dashboard string)
	// Self is how the summary's hints name this program.
	Self string
}

// Problems refuses demo settings that cannot work (the demo makes its own
// source, so the appliance's Source is not checked).
func (o Options) Problems() appliance.Problems {
	e := o.Config.Check(false)
	if o.Events < 1 {
		e.Add("events", "%d: want at least 1", o.Events)
	}
	if o.Loops < 1 {
		e.Add("loops", "%d: want at least 1", o.Loops)
	}
	if o.Rate < 0 {
		e.Add("rate", "%g: want events per second, or 0 for flat out", o.Rate)
	}
	e.NotNegative("span", o.Span, "stamping events when sent")
	e.Positive("timeout", o.Timeout)
	return e
}

// Run runs the demo, printing its progress and summary to stdout. It
// reports whether the summary was printed (what the lake holds is then as
// summarised) and the demo's error: a failed asset check or summary first,
// then the appliance's.
func Run(ctx context.Context, o Options, stdout io.Writer) (summarised bool, err error) {
	if err := ResetDir(o.Config.Data); err != nil {
		return false, err
	}
	src, err := startSource(&o.Config, stdout, o.Events, o.Loops, o.Rate, o.Span)
	if err != nil {
		return false, err
	}
	defer src.Close()
	counts := src.Counts()

	p, err := appliance.Open(ctx, o.Config, o.Log)
	if err != nil {
		return false, err
	}
	defer p.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- p.Run(runCtx, io.Discard) }()
	dashboard := p.WaitHTTP(runCtx)
	if dashboard != "" {
		fmt.Fprintf(stdout, "demo: dashboard at %s/ (metrics %[1]s/metrics; --follow keeps it up)\n", dashboard)
	}

	want := counts.OnTime + counts.Resent + counts.Late
	deadline := time.Now().Add(o.Timeout)
	if err := drain(ctx, p, stdout, errc, stop, want, deadline, o.Timeout); err != nil {
		return false, err
	}
	if o.Span > 0 {
		// Sessions emits what a batch's watermark closes, and the watermark
		// of a batch is fixed before it runs from the batches before it: the
		// batch that took the last events did not close what they made
		// due. The stream's next event does, as on the live stream.
		src.Loops(nextEdit(), 1)
		fmt.Fprintln(stdout, "demo: caught up; one more edit, stamped now, as the stream's next event: its sessions batch closes the sessions the watermark passed")
		if err := drain(ctx, p, stdout, errc, stop, want+1, deadline, o.Timeout); err != nil {
			return false, err
		}
	}
	// A failed check or a summary that could not run fails the demo (a
	// non-zero exit), after the lake's address is printed for a look.
	failed := summary(ctx, p, stdout)
	summarised = ctx.Err() == nil
	if failed != nil {
		fmt.Fprintf(stdout, "demo: FAILED: %v\n", failed)
	}
	printLake(stdout, o.Config.Data, o.Self)
	if !o.Follow && dashboard != "" && o.Hold != nil {
		o.Hold(ctx, dashboard)
	}
	return summarised, finish(stdout, o.Follow, errc, stop, failed)
}

// finish stops the pipeline, or with follow keeps it running until ctx
// ends, and returns how it ended: failed (the summary's verdict) first.
func finish(stdout io.Writer, follow bool, errc <-chan error, stop context.CancelFunc, failed error) error {
	var err error
	if follow {
		fmt.Fprintln(stdout, "demo: following; Ctrl-C stops")
		err = <-errc
	} else {
		stop()
		if err = <-errc; errors.Is(err, context.Canceled) {
			err = nil
		}
		fmt.Fprintln(stdout, "demo: done; the appliance and its dashboard stopped (--follow keeps them up until Ctrl-C)")
	}
	if failed != nil {
		return failed
	}
	return err
}

// drain waits until the broker holds want events and every query has
// caught up, printing a line whenever the state changes.
func drain(ctx context.Context, p *appliance.Appliance, stdout io.Writer, errc chan error, stop func(), want int64, deadline time.Time, timeout time.Duration) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastLine := ""
	for {
		select {
		case err := <-errc:
			if err == nil {
				err = ctx.Err()
			}
			return fmt.Errorf("pipeline stopped before draining: %w", err)
		case <-ctx.Done():
			stop()
			<-errc
			return ctx.Err()
		case <-tick.C:
		}
		st := p.Status(ctx)
		line := fmt.Sprintf("demo: broker %d/%d events, dead-letter %d, %s", st.Topics[ingest.DefaultTopic], want, st.Topics[ingest.DefaultDLQTopic], st.Lags())
		if line != lastLine {
			fmt.Fprintln(stdout, line)
			lastLine = line
		}
		if st.Drained(ingest.DefaultTopic, want) {
			return nil
		}
		if time.Now().After(deadline) {
			stop()
			<-errc
			return fmt.Errorf("pipeline did not drain within %s", timeout)
		}
	}
}

// ResetDir prepares a fresh demo directory: it creates it, or empties one
// that an earlier demo made. Anything else is refused.
func ResetDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) || err == nil && len(entries) == 0:
	case err != nil:
		return err
	default:
		if _, err := os.Stat(filepath.Join(dir, Marker)); err != nil {
			return fmt.Errorf("%s is not empty and was not made by the demo; pass --data with a new directory", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("reset demo directory: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, Marker), []byte("made by `lakehouse demo`; the next demo may delete this directory\n"), 0o644)
}
