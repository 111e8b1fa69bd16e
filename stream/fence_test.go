package stream

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"lakehouse/table"
)

// TestTwoWritersOneQuery: two bronze queries of the same name, each with
// its own checkpoint and batch size (two processes on the same tables, or
// a zombie and its replacement), run at once while records arrive. The
// commits are fenced (table.Batch.Fenced): whichever commits a batch first
// owns the query's sequence, the other's next commit fails with
// table.ErrFenced, and bronze holds every offset exactly once. It is
// inconclusive unless one of them was fenced.
func TestTwoWritersOneQuery(t *testing.T) {
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 4)
	defer db.Close()
	lakeA, lakeB := openLake(t, dir), openLake(t, dir)
	defer lakeA.Close()
	defer lakeB.Close()
	newQuery := func(lake *table.Lake, name string, max int64) *Query {
		q, err := NewBronze(db, lake, Config{DataDir: dir, CheckpointDir: filepath.Join(dir, "checkpoints-"+name),
			MaxOffsetsPerTrigger: max, Trigger: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	a, b := newQuery(lakeA, "a", 300), newQuery(lakeB, "b", 700)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fill(t, db, 2000, 100)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, q := range []*Query{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = q.Run(ctx) }()
	}
	for range 40 { // more records while both run
		fill(t, db, 100, 100)
		time.Sleep(10 * time.Millisecond)
	}
	// Wait until the survivor has landed everything, then stop it.
	want := NextOffsets(endOffsets(t, db)).Offset()
	for {
		m, ok, err := lakeA.LastCommitted(ctx, table.Bronze, BronzeQuery)
		if err != nil {
			t.Fatal(err)
		}
		if ok && Offset(m.Offsets) == want {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("bronze never reached the broker's end: marker %v, want %s; errors %v", m, want, errs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the loser's last attempt, if any
	cancel()
	wg.Wait()
	fenced := 0
	for i, err := range errs {
		switch {
		case errors.Is(err, table.ErrFenced):
			fenced++
		case err != nil && !errors.Is(err, context.Canceled):
			t.Errorf("writer %d: %v", i, err)
		}
	}
	checkExactlyOnce(t, bronzePairs(t, lakeA), endOffsets(t, db), false)
	if fenced == 0 {
		t.Fatalf("inconclusive: neither writer was fenced (errors %v)", errs)
	}
}
