package lakeio

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/table"
)

// TestWaitWakesOnCommit: a reader in the same process wakes up when the
// table it follows commits, not at its next poll.
func TestWaitWakesOnCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lake := openLake(t)
	src := NewSource(lake, table.Bronze)
	src.PollInterval = time.Hour // only the commit signal can wake it in time
	start := SnapshotOffset{}.Offset()
	woke := make(chan error, 1)
	go func() { woke <- src.Wait(ctx, start) }()
	time.Sleep(50 * time.Millisecond)
	rec := bronzeRows(0, 3)
	defer rec.Release()
	t0 := time.Now()
	if _, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", ID: 0, Offsets: "x", Records: []arrow.RecordBatch{rec}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-woke:
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d > 5*time.Second {
			t.Fatalf("Wait returned %s after the commit", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not wake on the commit (it would have waited for its hourly poll)")
	}
}
