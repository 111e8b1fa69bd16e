package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/marts"
)

func init() {
	register(&command{name: "demo", summary: "run the whole pipeline offline on a built-in replay of real events, then summarise", run: runDemo})
}

// demoMarker marks a data directory the demo created, so a later demo may
// reset it; the demo never deletes a directory without it.
const demoMarker = ".lakehouse-demo"

const defaultDemoDir = "./lakehouse-demo"

// defaultDemoSpan is how much past the demo's event times cover: at the
// demo's 4,000 events, 6 hours is about one event every 5 s, a pace at which
// the busiest editors have sessions of an hour or two, and most sessions
// end more than the 40 minutes (gap plus watermark) before now that closing
// them takes; the hourly mart gets 7 hours.
const defaultDemoSpan = 6 * time.Hour

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("demo", stderr)
	var f pipelineFlags
	f.register(fs)
	setDefault(fs, "data", defaultDemoDir)
	setDefault(fs, "trigger", "500ms")
	setDefault(fs, "sessions-trigger", "500ms")
	setDefault(fs, "http", "127.0.0.1:0") // a free port: the demo prints the dashboard's address
	events := fs.Int("events", 2000, "events in the generated recording (shaped like the 50 real ones)")
	loops := fs.Int("loops", 2, "times the recording is played, each with fresh event ids")
	rate := fs.Float64("rate", 5000, "replay pace in events/s (0: flat out)")
	span := fs.Duration("span", defaultDemoSpan, "event times of the replay spread over this much of the past, ending now, so that sessions close (a session is written a gap plus the watermark after its last edit); 0: stamped when sent")
	follow := fs.Bool("follow", false, "keep running after the summary (Ctrl-C stops)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up if the pipeline has not drained by then")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkDemoFlags(&f, *events, *loops, *rate, *span, *timeout); err != nil {
		return err
	}
	if err := f.checkHTTP(); err != nil {
		return err
	}
	if err := resetDemoDir(f.Data); err != nil {
		return err
	}
	summarised := false
	defer func() {
		// Ctrl-C (or SIGTERM): one line saying what is left, whatever
		// step it stopped.
		if ctx.Err() == nil {
			return
		}
		abs, _ := filepath.Abs(f.Data)
		if summarised {
			fmt.Fprintf(stdout, "demo: stopped; the lake in %s is as summarised above\n", abs)
			if errors.Is(err, context.Canceled) {
				err = nil // a failed check stays the exit status
			}
			return
		}
		err = interrupted(fmt.Sprintf("the demo stopped before its summary; the lake in %s holds what was committed by then (`%s verify --data %s` checks it; the next demo starts it over)",
			abs, self(), shellJoin([]string{abs})))
	}()
	out := io.Discard // the demo prints its own progress; --log-format json or LAKEHOUSE_DEMO_VERBOSE shows the log
	if f.logFormat == "json" || os.Getenv("LAKEHOUSE_DEMO_VERBOSE") != "" {
		out = stderr
	}
	log, err := f.logger(out)
	if err != nil {
		return err
	}
	src, err := startDemoSource(&f, stdout, *events, *loops, *rate, *span)
	if err != nil {
		return err
	}
	defer src.Close()
	counts := src.Counts()

	p, err := appliance.Open(ctx, f.Config, log)
	if err != nil {
		return err
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
	deadline := time.Now().Add(*timeout)
	if err := demoDrain(ctx, p, stdout, errc, stop, want, deadline, *timeout); err != nil {
		return err
	}
	if *span > 0 {
		// Sessions emits what a batch's watermark closes, and the watermark
		// of a batch is fixed before it runs from the batches before it: the
		// batch that took the last events did not close what they made
		// due. The stream's next event does, as on the live stream.
		src.Loops(demoNextEdit(), 1)
		fmt.Fprintln(stdout, "demo: caught up; one more edit, stamped now, as the stream's next event: its sessions batch closes the sessions the watermark passed")
		if err := demoDrain(ctx, p, stdout, errc, stop, want+1, deadline, *timeout); err != nil {
			return err
		}
	}
	// A failed check or a summary that could not run fails the demo (a
	// non-zero exit), after the lake's address is printed for a look.
	failed := demoSummary(ctx, p, stdout)
	summarised = ctx.Err() == nil
	if failed != nil {
		fmt.Fprintf(stdout, "demo: FAILED: %v\n", failed)
	}
	printDemoLake(stdout, f.Data)
	if !*follow && dashboard != "" && interactive(stdout) {
		// A person at a terminal gets to look at the dashboard the demo
		// printed before it goes away.
		holdDashboard(ctx, os.Stdin, stdout, dashboard)
	}
	return demoFinish(stdout, *follow, errc, stop, failed)
}

// demoFinish stops the pipeline, or with follow keeps it running until
// Ctrl-C, and returns how it ended: failed (the summary's verdict) first.
func demoFinish(stdout io.Writer, follow bool, errc <-chan error, stop context.CancelFunc, failed error) error {
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

// startDemoSource starts the demo's replay server (f.source becomes its
// address) and says what it plays.
func startDemoSource(f *pipelineFlags, stdout io.Writer, events, loops int, rate float64, span time.Duration) (*replay.Server, error) {
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

// printDemoLake says where the demo's lake is and how to look at it.
func printDemoLake(stdout io.Writer, data string) {
	abs, _ := filepath.Abs(data)
	fmt.Fprintf(stdout, `
demo: the lake is in %s
  look at it:   %[2]s topics --data %[1]s
                %[2]s verify --data %[1]s
                %[2]s query --data %[1]s "SELECT wiki, count(*) AS edits FROM silver.edits GROUP BY wiki ORDER BY edits DESC LIMIT 5"
`, shellJoin([]string{abs}), self())
}

// checkDemoFlags refuses demo settings that cannot work (the demo makes
// its own source, so --source is not checked).
func checkDemoFlags(f *pipelineFlags, events, loops int, rate float64, span, timeout time.Duration) error {
	e := f.Check(false)
	if events < 1 {
		e.Add("events", "%d: want at least 1", events)
	}
	if loops < 1 {
		e.Add("loops", "%d: want at least 1", loops)
	}
	if rate < 0 {
		e.Add("rate", "%g: want events per second, or 0 for flat out", rate)
	}
	e.NotNegative("span", span, "stamping events when sent")
	e.Positive("timeout", timeout)
	return refused(e)
}

// demoDrain waits until the broker holds want events and every query has
// caught up, printing a line whenever the state changes.
func demoDrain(ctx context.Context, p *appliance.Appliance, stdout io.Writer, errc chan error, stop func(), want int64, deadline time.Time, timeout time.Duration) error {
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

// demoNextEdit is one generated edit (silver keeps it, so sessions runs a
// batch for it), to be stamped when it is sent.
func demoNextEdit() replay.Recording {
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

// holdDashboard keeps the appliance (and its dashboard) up until a line
// is read from in (Enter) or ctx ends (Ctrl-C).
func holdDashboard(ctx context.Context, in io.Reader, stdout io.Writer, url string) {
	fmt.Fprintf(stdout, "demo: the dashboard stays up at %s/ until you press Enter (or Ctrl-C)\n", url)
	read := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(in).ReadString('\n')
		close(read)
	}()
	select {
	case <-read:
	case <-ctx.Done():
	}
}

// demoSummary refreshes the gold marts once and prints what they hold. It
// returns the refresh's error (ErrChecksFailed naming the checks that
// failed, after printing every check and the summary) or the summary's.
func demoSummary(ctx context.Context, p *appliance.Appliance, w io.Writer) error {
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
