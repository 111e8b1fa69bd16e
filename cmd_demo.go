package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"lakehouse/ingest"
)

func init() {
	register(&command{name: "demo", summary: "run the whole pipeline offline on a built-in replay of real events, then summarise", run: runDemo})
}

// demoMarker marks a data directory the demo created, so a later demo may
// reset it; the demo never deletes a directory without it.
const demoMarker = ".lakehouse-demo"

const defaultDemoDir = "./lakehouse-demo"

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	var f pipelineFlags
	f.register(fs)
	_ = fs.Set("data", defaultDemoDir)
	_ = fs.Set("trigger", "500ms")
	_ = fs.Set("sessions-trigger", "500ms")
	_ = fs.Set("http", "127.0.0.1:0") // a free port: the demo prints the dashboard's address
	events := fs.Int("events", 2000, "events in the generated recording (shaped like the 50 real ones)")
	loops := fs.Int("loops", 2, "times the recording is played, each with fresh event ids")
	rate := fs.Float64("rate", 5000, "replay pace in events/s (0: flat out)")
	follow := fs.Bool("follow", false, "keep running after the summary (Ctrl-C stops)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up if the pipeline has not drained by then")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.checkHTTP(); err != nil {
		return err
	}
	if err := resetDemoDir(f.data); err != nil {
		return err
	}
	log, err := f.logger(io.Discard)
	if f.logFormat == "json" || os.Getenv("LAKEHOUSE_DEMO_VERBOSE") != "" {
		log, err = f.logger(stderr)
	}
	if err != nil {
		return err
	}
	replay, url, err := ingest.Demo("127.0.0.1:0", 1, *events, *loops, *rate)
	if err != nil {
		return fmt.Errorf("start replay server: %w", err)
	}
	defer replay.Close()
	counts := replay.Counts()
	f.source = url
	fmt.Fprintf(stdout, "demo: replaying %d events (%d loops of %d, plus %d contract violations and %d canaries) from %s\n",
		counts.Events, counts.Loops, *events, counts.Violations, counts.Canaries, url)

	p, err := openPipeline(ctx, f, log)
	if err != nil {
		return err
	}
	defer p.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- p.run(runCtx, io.Discard) }()
	if url := p.waitHTTP(runCtx); url != "" {
		fmt.Fprintf(stdout, "demo: dashboard at %s/ (metrics %[1]s/metrics; --follow keeps it up)\n", url)
	}

	want := counts.OnTime + counts.Resent + counts.Late
	deadline := time.Now().Add(*timeout)
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
		st := p.status(ctx)
		line := fmt.Sprintf("demo: broker %d/%d events, dead-letter %d, %s", st.Topics[ingest.DefaultTopic], want, st.Topics[ingest.DefaultDLQTopic], st.Lags())
		drained := st.Drained(ingest.DefaultTopic, want)
		if line != lastLine {
			fmt.Fprintln(stdout, line)
			lastLine = line
		}
		if drained {
			break
		}
		if time.Now().After(deadline) {
			stop()
			<-errc
			return fmt.Errorf("pipeline did not drain within %s", *timeout)
		}
	}
	if err := p.demoSummary(ctx, stdout); err != nil {
		fmt.Fprintf(stdout, "demo: summary failed: %v\n", err)
	}
	abs, _ := filepath.Abs(f.data)
	fmt.Fprintf(stdout, `
demo: the lake is in %s
  look at it:   go run . topics --data %[1]s
                go run . verify --data %[1]s
                go run . query --data %[1]s "SELECT wiki, count(*) AS edits FROM silver.edits GROUP BY wiki ORDER BY edits DESC LIMIT 5"
`, abs)
	if *follow {
		fmt.Fprintln(stdout, "demo: following; Ctrl-C stops")
		if err := <-errc; err != nil {
			return err
		}
		return nil
	}
	stop()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// resetDemoDir prepares a fresh demo directory: it creates it, or empties
// one that an earlier demo made. Anything else is refused.
func resetDemoDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) || err == nil && len(entries) == 0:
	case err != nil:
		return err
	default:
		if _, err := os.Stat(filepath.Join(dir, demoMarker)); err != nil {
			return fmt.Errorf("%s is not empty and was not made by the demo; pass --data with a new directory", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("reset demo directory: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, demoMarker), []byte("made by `lakehouse demo`; the next demo may delete this directory\n"), 0o644)
}
