package main

import (
	"flag"
	"io"
	"log/slog"
	"testing"
	"time"

	"lakehouse/ingest"
)

// TestIngestBatchesByTheTrigger: ingest holds an event in its batch for up
// to one bronze trigger, whatever --trigger says, so the broker takes one
// fsynced append per trigger at a slow stream instead of one per 200 ms,
// and its count cap grows with the trigger so that a batch ends by it (see pipelineFlags.ingestConfig for why freshness does not suffer; the
// soak measures both).
func TestIngestBatchesByTheTrigger(t *testing.T) {
	for _, args := range [][]string{nil, {"--trigger", "2500ms"}, {"--trigger", "150ms"}, {"--trigger", "30s"}} {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f pipelineFlags
		f.register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg := f.ingestConfig(slog.New(slog.NewTextHandler(io.Discard, nil)))
		if cfg.BatchDelay != f.trigger || f.trigger <= 0 {
			t.Errorf("%v: ingest batch delay %v, bronze trigger %v: want them equal", args, cfg.BatchDelay, f.trigger)
		}
		// A batch ends by the trigger, not by its count, below
		// DefaultBatchMax events a second (a 30 s trigger at the real rate
		// is 1,050 events).
		if cfg.BatchMax < ingest.DefaultBatchMax || time.Duration(cfg.BatchMax)*time.Second < time.Duration(ingest.DefaultBatchMax)*f.trigger {
			t.Errorf("%v: ingest batch cap %d events for a %v trigger: want %d a second at least", args, cfg.BatchMax, f.trigger, ingest.DefaultBatchMax)
		}
		if cfg.URL != f.source || cfg.Partitions != f.partitions || cfg.UserAgent != f.userAgent || cfg.MaxEventAhead != f.maxEventAhead {
			t.Errorf("%v: ingest config %+v does not carry the flags", args, cfg)
		}
	}
}
