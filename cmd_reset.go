package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	bolterrors "go.etcd.io/bbolt/errors"

	"lakehouse/ingest"
	"lakehouse/internal/appliance"
)

func init() {
	register(&command{name: "reset-position", summary: "set where ingest resumes the stream (--to ID, --since TIME or --latest); the appliance must be stopped", run: runResetPosition})
}

// runResetPosition rewrites the stored resume position through the
// broker's metadata, in one transaction. It needs the broker's file lock, so
// it refuses while the appliance runs.
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
	db, err := c.OpenBrokerExisting(ctx, false)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return fmt.Errorf("the appliance holds %s: stop it first (the position is read once, at start): %w", c.BrokerPath(), err)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	old, err := ingest.ResetPosition(ctx, db, ingest.DefaultSource, r)
	if err != nil {
		return err
	}
	now := ""
	switch {
	case r.To != "":
		now = "resume after " + strconv.Quote(r.To)
	case r.Latest:
		now = "no position: the next start reads from the live end"
	default:
		now = "no position: the next start reads from " + r.Since.UTC().Format(time.RFC3339)
	}
	if len(old) > 200 {
		old = old[:200] + fmt.Sprintf("... (%d bytes)", len(old))
	}
	fmt.Fprintf(stdout, "resume position of %s in %s: was %s; now %s\n", ingest.DefaultSource, c.BrokerName(), strconv.Quote(old), now)
	return nil
}
