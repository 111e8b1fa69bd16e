package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"lakehouse/ingest"
	"lakehouse/internal/appliance"
)

func init() {
	register(&command{name: "reset-position", summary: "set where ingest resumes the stream (--to ID, --since TIME or --latest); the appliance must be stopped", run: runResetPosition})
}

// runResetPosition rewrites the stored resume position
// (appliance.Store.ResetPosition). It needs the broker's file lock, so it
// refuses while the appliance runs.
func runResetPosition(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reset-position", stderr)
	var c appliance.Store
	registerStore(fs, &c)
	to := fs.String("to", "", "resume after this SSE id (as Last-Event-ID; Wikimedia's ids are JSON arrays of {topic, partition, offset|timestamp})")
	since := fs.String("since", "", "forget the position; the next start reads from this RFC 3339 time")
	latest := fs.Bool("latest", false, "forget the position; the next start reads from the live end (or from run's --since)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var r ingest.Reset
	set := 0
	if *to != "" {
		r.To, set = *to, set+1
	}
	if *since != "" {
		t, err := time.Parse(time.RFC3339, *since)
		if err != nil {
			return fmt.Errorf("--since %q: want RFC 3339: %w", *since, errUsage)
		}
		r.Since, set = t, set+1
	}
	if *latest {
		r.Latest, set = true, set+1
	}
	if set != 1 {
		fmt.Fprintln(stderr, "lakehouse reset-position: give exactly one of --to, --since, --latest")
		fs.Usage()
		return errUsage
	}
	return c.ResetPosition(ctx, r, stdout)
}
