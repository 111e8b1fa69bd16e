package appliance

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"lakehouse/ingest"
	"lakehouse/stream"
)

// TestIngestBatchesByTheTrigger: ingest holds an event in its batch for up
// to one bronze trigger, whatever --trigger says, so the broker takes one
// fsynced append per trigger at a slow stream instead of one per 200 ms,
// and its count cap grows with the trigger so that a batch ends by it (see Config.ingestConfig for why freshness does not suffer; the
// soak measures both).
func TestIngestBatchesByTheTrigger(t *testing.T) {
	for _, trigger := range []time.Duration{stream.DefaultTrigger, 2500 * time.Millisecond, 150 * time.Millisecond, 30 * time.Second} {
		f := Config{Trigger: trigger, Source: "http://127.0.0.1:1/stream", UserAgent: "test", Partitions: 3, MaxEventAhead: time.Minute}
		args := "--trigger " + trigger.String()
		cfg := f.ingestConfig(slog.New(slog.NewTextHandler(io.Discard, nil)))
		if cfg.BatchDelay != f.Trigger || f.Trigger <= 0 {
			t.Errorf("%v: ingest batch delay %v, bronze trigger %v: want them equal", args, cfg.BatchDelay, f.Trigger)
		}
		// A batch ends by the trigger, not by its count, below
		// DefaultBatchMax events a second (a 30 s trigger at the real rate
		// is 1,050 events).
		if cfg.BatchMax < ingest.DefaultBatchMax || time.Duration(cfg.BatchMax)*time.Second < time.Duration(ingest.DefaultBatchMax)*f.Trigger {
			t.Errorf("%v: ingest batch cap %d events for a %v trigger: want %d a second at least", args, cfg.BatchMax, f.Trigger, ingest.DefaultBatchMax)
		}
		if cfg.URL != f.Source || cfg.Partitions != f.Partitions || cfg.UserAgent != f.UserAgent || cfg.MaxEventAhead != f.MaxEventAhead {
			t.Errorf("%v: ingest config %+v does not carry the flags", args, cfg)
		}
	}
}
