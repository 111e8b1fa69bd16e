package table_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"lakehouse/internal/fault"
	"lakehouse/table"
)

// TestCommitConflict makes the race deterministic: while handle A sits between
// writing its data files and its catalog commit (the table.after-data-files
// hook), handle B commits. A's pinned commit must then fail, reload, and
// either skip (B committed the same batch: a zombie) or retry (B committed
// something else).
func TestCommitConflict(t *testing.T) {
	cases := []struct {
		name          string
		other         table.Batch // what B commits while A is paused
		wantCommitted bool        // A's result
		wantRows      int64
		wantSnapshots int
	}{
		{"zombie-same-batch", batchOf("bronze", 1, bronzeRecord(0, 0, 10)), false, 10, 1},
		{"other-query", batchOf("backfill", 1, bronzeRecord(1, 0, 10)), true, 20, 2},
	}
	for _, be := range backends() {
		for _, c := range cases {
			t.Run(be.name+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				cfg := be.cfg(t, dir)
				a, b := openLake(t, cfg), openLake(t, cfg)
				ctx := context.Background()
				fired := false
				fault.ArmFunc("table.after-data-files", 0, func(string) {
					fault.Disarm()
					fired = true
					if _, err := b.CommitBatch(ctx, table.Bronze, c.other); err != nil {
						t.Errorf("B commit: %v", err)
					}
				})
				t.Cleanup(fault.Disarm)
				res, err := a.CommitBatch(ctx, table.Bronze, batchOf("bronze", 1, bronzeRecord(0, 0, 10)))
				if err != nil {
					t.Fatalf("A commit: %v", err)
				}
				if !fired {
					t.Fatal("inconclusive: hook table.after-data-files never fired")
				}
				if res.Committed != c.wantCommitted {
					t.Fatalf("A committed: got %v, want %v", res.Committed, c.wantCommitted)
				}
				rows, seen := scanOffsets(t, a, table.Bronze)
				if rows != c.wantRows {
					t.Fatalf("rows: got %d, want %d (%v)", rows, c.wantRows, seen)
				}
				snaps, err := a.AppendsAfter(ctx, table.Bronze, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(snaps) != c.wantSnapshots {
					t.Fatalf("snapshots: got %d, want %d", len(snaps), c.wantSnapshots)
				}
				if be.name == "local" {
					files, err := a.DataFiles(ctx, table.Bronze)
					if err != nil {
						t.Fatal(err)
					}
					if got, want := countParquet(t, filepath.Join(dir, "warehouse")), len(files.Paths); got != want {
						t.Fatalf("parquet files on disk: got %d, want %d referenced (loser's files not removed)", got, want)
					}
				}
			})
		}
	}
}

func countParquet(t *testing.T, root string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return n
}
