package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"lakehouse/internal/demo"
	"lakehouse/internal/humanize"
)

func init() {
	register(&command{name: "demo", summary: "run the whole pipeline offline on a built-in replay of real events, then summarise", run: runDemo})
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("demo", stderr)
	var f pipelineFlags
	f.register(fs)
	setDefault(fs, "data", demo.DefaultDir)
	setDefault(fs, "trigger", "500ms")
	setDefault(fs, "sessions-trigger", "500ms")
	setDefault(fs, "http", "127.0.0.1:0") // a free port: the demo prints the dashboard's address
	o := demo.Options{Self: self()}
	fs.IntVar(&o.Events, "events", 2000, "events in the generated recording (shaped like the 50 real ones)")
	fs.IntVar(&o.Loops, "loops", 2, "times the recording is played, each with fresh event ids")
	fs.Float64Var(&o.Rate, "rate", 5000, "replay pace in events/s (0: flat out)")
	fs.DurationVar(&o.Span, "span", demo.DefaultSpan, "event times of the replay spread over this much of the past, ending now, so that sessions close (a session is written a gap plus the watermark after its last edit); 0: stamped when sent")
	fs.BoolVar(&o.Follow, "follow", false, "keep running after the summary (Ctrl-C stops)")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "give up if the pipeline has not drained by then")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.checkHTTP(); err != nil {
		return err
	}
	o.Config = f.Config
	if err := refused(o.Problems()); err != nil {
		return err
	}
	out := io.Discard // the demo prints its own progress; --log-format json or LAKEHOUSE_DEMO_VERBOSE shows the log
	if f.logFormat == "json" || os.Getenv("LAKEHOUSE_DEMO_VERBOSE") != "" {
		out = stderr
	}
	if o.Log, err = f.logger(out); err != nil {
		return err
	}
	if interactive(stdout) {
		// A person at a terminal gets to look at the dashboard the demo
		// printed before it goes away.
		o.Hold = func(ctx context.Context, url string) { holdDashboard(ctx, os.Stdin, stdout, url) }
	}
	summarised, err := demo.Run(ctx, o, stdout)
	if ctx.Err() == nil {
		return err
	}
	// Ctrl-C (or SIGTERM): one line saying what is left, whatever step it
	// stopped.
	abs, _ := filepath.Abs(f.Data)
	if summarised {
		fmt.Fprintf(stdout, "demo: stopped; the lake in %s is as summarised above\n", abs)
		if errors.Is(err, context.Canceled) {
			err = nil // a failed check stays the exit status
		}
		return err
	}
	return interrupted(fmt.Sprintf("the demo stopped before its summary; the lake in %s holds what was committed by then (`%s verify --data %s` checks it; the next demo starts it over)",
		abs, self(), humanize.ShellJoin([]string{abs})))
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
