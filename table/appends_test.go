package table_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"lakehouse/table"
)

// TestAppendsAfterWalksMetadataOnce: AppendsAfter walks main's history once
// per metadata file (iceberg-go clones every snapshot it hands out), so a
// repeated call on an unchanged table allocates a small part of the first
// call after a commit, and a commit in between is seen at once.
func TestAppendsAfterWalksMetadataOnce(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, table.Config{Dir: t.TempDir()})
	const commits = 30
	for i := range int64(commits) {
		rec := bronzeRecord(0, i*10, 10)
		mustCommit(t, l, table.Bronze, batchOf("appends", i+1, rec))
		rec.Release()
	}
	appends := func() ([]table.Snapshot, uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := l.AppendsAfter(ctx, table.Bronze, 0)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		return got, after.TotalAlloc - before.TotalAlloc
	}
	first, walk := appends()
	if len(first) != commits {
		t.Fatalf("AppendsAfter(0) returned %d snapshots, want %d", len(first), commits)
	}
	again := ^uint64(0)
	for range 5 {
		got, n := appends()
		if len(got) != commits || got[commits-1].ID != first[commits-1].ID {
			t.Fatalf("a repeated AppendsAfter(0) returned %d snapshots, newest %d; want %d, newest %d",
				len(got), got[len(got)-1].ID, commits, first[commits-1].ID)
		}
		again = min(again, n)
	}
	t.Logf("AppendsAfter over %d snapshots: %d bytes after a commit, %d on unchanged metadata", commits, walk, again)
	if again*4 > walk {
		t.Errorf("AppendsAfter on unchanged metadata allocated %d bytes against %d after a commit: the history is walked on every call", again, walk)
	}

	got, err := l.AppendsAfter(ctx, table.Bronze, first[commits-2].ID)
	if err != nil || len(got) != 1 || got[0].ID != first[commits-1].ID {
		t.Fatalf("AppendsAfter(second newest) = %v, %v; want the newest only", got, err)
	}
	rec := bronzeRecord(0, commits*10, 10)
	res := mustCommit(t, l, table.Bronze, batchOf("appends", commits+1, rec))
	rec.Release()
	got, err = l.AppendsAfter(ctx, table.Bronze, first[commits-1].ID)
	if err != nil || len(got) != 1 || got[0].ID != res.SnapshotID {
		t.Fatalf("after a commit AppendsAfter(previous newest) = %v, %v; want snapshot %d", got, err, res.SnapshotID)
	}
	if _, err := l.AppendsAfter(ctx, table.Bronze, 12345); !errors.Is(err, table.ErrSnapshotNotFound) {
		t.Fatalf("AppendsAfter(unknown snapshot) = %v, want ErrSnapshotNotFound", err)
	}
}
