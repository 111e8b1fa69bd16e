package stream

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// failingProgress refuses writes while down is set.
type failingProgress struct {
	memProgress
	down atomic.Bool
}

func (f *failingProgress) WriteProgress(ctx context.Context, query string, rows []Progress) error {
	if f.down.Load() {
		return errors.New("ops.stream_progress unavailable")
	}
	return f.memProgress.WriteProgress(ctx, query, rows)
}

// TestPurgeKeepsUnflushedProgress: when ops.stream_progress cannot be
// written for longer than the checkpoint retains batches, the commit entries
// holding the unwritten rows must survive the purge, so a restart sends
// every row.
func TestPurgeKeepsUnflushedProgress(t *testing.T) {
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 2)
	defer db.Close()
	fill(t, db, 3000, 500)
	sink, prog := newMemSink(), &failingProgress{}
	prog.down.Store(true)
	cfg := Config{CheckpointDir: filepath.Join(dir, "cp"), MaxOffsetsPerTrigger: 100, RetainBatches: 5, ProgressEvery: 3, Trigger: -1}
	q := newTestQuery(t, cfg, db, sink, nil, prog)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- q.Run(runCtx) }()
	const batches = 30 // 3000 records / 100 per batch
	for {
		if last, runs := q.Last(); runs == batches && last.Lag == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("query did not drain")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := len(prog.rows["bronze"]); got != 0 {
		t.Fatalf("progress rows written while the sink was down: %d", got)
	}
	prog.down.Store(false)
	q2 := newTestQuery(t, cfg, db, sink, nil, prog)
	if err := q2.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	got := sortedBatches(prog.rows["bronze"])
	if len(got) != batches {
		t.Fatalf("progress rows after restart: got %d (%v), want %d: rows lost with purged commit entries", len(got), got, batches)
	}
}
