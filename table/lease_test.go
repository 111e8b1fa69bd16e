package table_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"lakehouse/table"
)

// TestLeaseKeepsAReadersFiles: a leased snapshot and its files outlive a
// compaction that replaces them and an expiry down to one snapshot, and
// read back whole through DataFilesAt; once the lease is released the
// next expiry removes them (so the lease, not luck, kept them).
func TestLeaseKeepsAReadersFiles(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, table.Config{Dir: t.TempDir()})
	commitEventFiles(t, l, 3, 4, 50, func(int) bool { return false })
	ls, err := l.Lease(ctx, []string{table.Bronze, table.SilverEdits, "nope.none"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	snap := ls.Snapshots[table.Bronze]
	if _, ok := ls.Snapshots["nope.none"]; ok || snap == 0 || ls.Snapshots[table.SilverEdits] != 0 {
		t.Fatalf("lease snapshots %v: want bronze's, silver's 0, no entry for a table that does not exist", ls.Snapshots)
	}
	leased, err := l.DataFilesAt(ctx, table.Bronze, snap)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := l.Compact(ctx, table.Bronze, mergeAll); err != nil || res.FilesRemoved != 4 {
		t.Fatalf("inconclusive: compaction replaced %d files (%v)", res.FilesRemoved, err)
	}
	rec := bronzeRecord(0, 1000, 10)
	defer rec.Release()
	mustCommit(t, l, table.Bronze, batchOf("bronze", 10, rec))
	if _, err := l.ExpireSnapshots(ctx, table.Bronze, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	again, err := l.DataFilesAt(ctx, table.Bronze, snap)
	if err != nil {
		t.Fatalf("the leased snapshot after compaction and expiry: %v", err)
	}
	for _, p := range again.Paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("a file of the leased snapshot is gone: %v", err)
		}
	}
	if again.Rows != 200 || len(again.Paths) != len(leased.Paths) {
		t.Fatalf("leased snapshot reads %d rows in %d files, want 200 in %d", again.Rows, len(again.Paths), len(leased.Paths))
	}

	if err := l.Release(ls.ID); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ls.ID); !errors.Is(err, table.ErrNoLease) {
		t.Fatalf("second release: %v, want ErrNoLease", err)
	}
	if _, err := l.ExpireSnapshots(ctx, table.Bronze, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DataFilesAt(ctx, table.Bronze, snap); !errors.Is(err, table.ErrSnapshotNotFound) {
		t.Fatalf("after the release the snapshot survives expiry: %v", err)
	}
	gone := 0
	for _, p := range leased.Paths {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			gone++
		}
	}
	if gone != len(leased.Paths) {
		t.Fatalf("%d of %d replaced files deleted after the release; want all", gone, len(leased.Paths))
	}
}

// TestLeaseEnds: a lease past its end holds nothing.
func TestLeaseEnds(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, table.Config{Dir: t.TempDir()})
	commitEventFiles(t, l, 5, 3, 20, func(int) bool { return false })
	ls, err := l.Lease(ctx, []string{table.Bronze}, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(l.Leases()); n != 0 {
		t.Fatalf("%d leases in force after the end", n)
	}
	rec := bronzeRecord(0, 1000, 5)
	defer rec.Release()
	mustCommit(t, l, table.Bronze, batchOf("bronze", 10, rec))
	if _, err := l.ExpireSnapshots(ctx, table.Bronze, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DataFilesAt(ctx, table.Bronze, ls.Snapshots[table.Bronze]); !errors.Is(err, table.ErrSnapshotNotFound) {
		t.Fatalf("a snapshot whose lease ended survives expiry: %v", err)
	}
	if _, err := l.Lease(ctx, []string{table.Bronze}, 0); err == nil {
		t.Fatal("a lease of no duration was granted")
	}
}
