package telemetry

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"lakehouse/stream"
)

// TestOnBatchTotals: each batch adds to its query's totals, its durations
// land in the buckets /metrics exports (cumulative), and Wire carries the
// sums.
func TestOnBatchTotals(t *testing.T) {
	tel := New()
	on := tel.OnBatch("bronze")
	on(stream.Progress{RowsIn: 10, RowsOut: 9, Total: 3 * time.Millisecond, Commit: time.Millisecond})
	on(stream.Progress{RowsIn: 5, RowsOut: 5, Total: 2 * time.Second, Commit: 30 * time.Millisecond, Lag: 7})
	q, ok := tel.Query("bronze")
	if !ok || q.Batches != 2 || q.RowsIn != 15 || q.RowsOut != 14 {
		t.Fatalf("totals %+v (%v)", q, ok)
	}
	if _, ok := tel.Query("silver"); ok {
		t.Fatal("a query without batches has totals")
	}
	b := q.BatchDur.Buckets()
	if q.BatchDur.Count != 2 || b[0.005] != 1 || b[2.5] != 2 || b[1] != 1 {
		t.Fatalf("batch durations: count %d, buckets %v", q.BatchDur.Count, b)
	}
	w := q.Wire()
	if w.Batches != 2 || w.BatchSeconds < 2.003 || w.BatchSeconds > 2.0031 || w.CommitSeconds < 0.031 || w.CommitSeconds > 0.0311 {
		t.Fatalf("wire %+v", w)
	}
}

// TestNewestBatches: the ring keeps the newest batches; Window sums those
// within the span, LagTrend needs three batches that all left a lag and
// span most of it.
func TestNewestBatches(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	var q Totals
	for i := range recentBatches + 50 { // wraps
		q.Record(Batch{At: t0.Add(time.Duration(i) * time.Second), Candidates: 10, Late: 1, Lag: int64(i)})
	}
	now := t0.Add(time.Duration(recentBatches+49) * time.Second)
	n, cand, late := q.Window(now, 9*time.Second)
	if n != 10 || cand != 100 || late != 10 {
		t.Fatalf("window: %d batches, %d candidates, %d late; want 10, 100, 10", n, cand, late)
	}
	first, last, ok := q.LagTrend(now, 20*time.Second)
	if !ok || last.Lag-first.Lag != 20 {
		t.Fatalf("trend: %v %+v %+v", ok, first, last)
	}
	q.Record(Batch{At: now.Add(time.Second), Lag: 0})
	if _, _, ok := q.LagTrend(now.Add(time.Second), 20*time.Second); ok {
		t.Fatal("a trend across a batch that caught up")
	}
}

// TestRingHandler: warnings and errors are kept, newest first, with their
// attributes; info is passed on and not kept.
func TestRingHandler(t *testing.T) {
	ring := NewLogRing(2)
	log := slog.New(&RingHandler{Next: slog.NewTextHandler(io.Discard, nil), Ring: ring}).With("component", "x")
	log.Info("fine")
	log.Warn("one", "n", 1)
	log.Error("two")
	log.Warn("three")
	got := ring.Newest()
	if len(got) != 2 || got[0].Msg != "three" || got[1].Msg != "two" || got[1].Attrs != "component=x" {
		t.Fatalf("kept %+v", got)
	}
	if !(&RingHandler{Next: slog.NewTextHandler(io.Discard, nil), Ring: ring}).Enabled(context.Background(), slog.LevelWarn) {
		t.Fatal("warnings not enabled")
	}
}
