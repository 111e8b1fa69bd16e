package lakeio

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/stream"
	"lakehouse/table"
)

// countSink counts the rows committed per batch (no table).
type countSink struct {
	mu   sync.Mutex
	rows int64
	last stream.Marker
	ok   bool
}

func (s *countSink) Commit(_ context.Context, b stream.Batch, rows []arrow.RecordBatch) (stream.SinkResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, r := range rows {
		n += r.NumRows()
	}
	s.rows += n
	s.last, s.ok = stream.Marker{Batch: b.ID, End: b.End, QueryID: b.QueryID}, true
	return stream.SinkResult{Committed: true, Rows: n}, nil
}

func (s *countSink) LastCommitted(context.Context, string) (stream.Marker, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.ok, nil
}

func (s *countSink) count() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rows
}

// TestBacklogOfSnapshotsDoesNotWaitForTrigger: a table source plans whole
// snapshots, so a batch over a backlog can stop short of the cap; the next
// batch must still start at once, not a trigger later (a sessions query on
// a slow trigger would otherwise drain a backlog a snapshot per trigger).
func TestBacklogOfSnapshotsDoesNotWaitForTrigger(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lake := openLake(t)
	const snapshots, rows = 6, 30
	for i := 0; i < snapshots; i++ {
		rec := bronzeRows(int64(i*rows), rows)
		if _, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", ID: int64(i), Offsets: "x",
			Records: []arrow.RecordBatch{rec}}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	sink := &countSink{}
	// The cap fits one snapshot (30 rows), not two: every batch stops short.
	q, err := stream.New(stream.Config{Name: "reader", CheckpointDir: filepath.Join(t.TempDir(), "cp"),
		Trigger: time.Hour, MaxOffsetsPerTrigger: 50}, NewSource(lake, table.Bronze), nil, sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for sink.count() < snapshots*rows {
		if time.Now().After(deadline) {
			_, runs := q.Last()
			t.Fatalf("a backlog of %d snapshots with a 1 h trigger: %d batches ran, %d rows, want all", snapshots, runs, sink.count())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The sink sees a batch's rows before the runner counts the batch.
	for _, runs := q.Last(); runs < snapshots && time.Now().Before(deadline); _, runs = q.Last() {
		time.Sleep(10 * time.Millisecond)
	}
	if _, runs := q.Last(); runs != snapshots {
		t.Errorf("batches: got %d, want one per snapshot (%d)", runs, snapshots)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
}
