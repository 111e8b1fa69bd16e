package table_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/table"
)

// TestReplaceMissing: a deleted data file is found by CheckDataFiles with
// its rows and offset bounds; ReplaceMissing refuses rows that do not add
// up, and a table that moved since the check; with the right rows it
// commits one replace snapshot after which the table scans whole and the
// check finds nothing missing, and no append snapshot was added.
func TestReplaceMissing(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, table.Config{Dir: t.TempDir()})
	for id := int64(1); id <= 3; id++ {
		mustCommit(t, l, table.Bronze, batchOf("bronze", id, bronzeRecord(0, id*100, 10)))
	}
	files, err := l.DataFiles(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(files.Paths[0]); err != nil {
		t.Fatal(err)
	}
	check, err := l.CheckDataFiles(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	if len(check.Missing) != 1 || check.Files != len(files.Paths) {
		t.Fatalf("check: %+v", check)
	}
	m := check.Missing[0]
	lo, hi := m.Lower["broker_offset"], m.Upper["broker_offset"]
	if m.Rows != 10 || hi-lo != 9 || m.Lower["broker_partition"] != 0 {
		t.Fatalf("missing file: %d rows, offsets %d..%d", m.Rows, lo, hi)
	}
	appendsBefore, err := l.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReplaceMissing(ctx, check, []arrow.RecordBatch{bronzeRecord(0, lo, 9)}); err == nil {
		t.Fatal("9 rows for a file of 10 were accepted")
	}
	moved := check
	moved.Snapshot++
	if _, err := l.ReplaceMissing(ctx, moved, []arrow.RecordBatch{bronzeRecord(0, lo, 10)}); !errors.Is(err, table.ErrMoved) {
		t.Fatalf("stale check: %v, want ErrMoved", err)
	}
	if _, err := l.ReplaceMissing(ctx, check, []arrow.RecordBatch{bronzeRecord(0, lo, 10)}); err != nil {
		t.Fatal(err)
	}
	n, seen := scanOffsets(t, l, table.Bronze)
	if n != 30 || len(seen) != 30 {
		t.Fatalf("after the replace: %d rows, %d distinct offsets, want 30", n, len(seen))
	}
	if again, err := l.CheckDataFiles(ctx, table.Bronze); err != nil || len(again.Missing) != 0 {
		t.Fatalf("check after the replace: %+v, %v", again, err)
	}
	appendsAfter, err := l.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil || len(appendsAfter) != len(appendsBefore) {
		t.Fatalf("the replace added an append snapshot: %d appends before, %d after (%v)", len(appendsBefore), len(appendsAfter), err)
	}
}

// TestDeleteBefore: rows older than the cutoff go (whole files dropped, a
// file straddling the cutoff rewritten), younger ones stay, and a second
// pass deletes nothing.
func TestDeleteBefore(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, table.Config{Dir: t.TempDir()})
	for id := int64(1); id <= 3; id++ {
		mustCommit(t, l, table.Bronze, batchOf("bronze", id, bronzeRecord(0, (id-1)*10, 10)))
	}
	// Offsets 0..29 have broker_ts baseTime+offset seconds: cut at 15.
	n, err := l.DeleteBefore(ctx, table.Bronze, "broker_ts", baseTime.Add(15*time.Second))
	if err != nil || n != 15 {
		t.Fatalf("DeleteBefore: %d rows, %v; want 15", n, err)
	}
	rows, seen := scanOffsets(t, l, table.Bronze)
	if rows != 15 || len(seen) != 15 {
		t.Fatalf("after: %d rows, %d offsets, want 15", rows, len(seen))
	}
	for o := range seen {
		if o < 15 {
			t.Fatalf("offset %d survived the cutoff", o)
		}
	}
	st, err := l.Stats(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.DeleteBefore(ctx, table.Bronze, "broker_ts", baseTime.Add(15*time.Second)); err != nil || n != 0 {
		t.Fatalf("second pass: %d rows, %v", n, err)
	}
	if st2, err := l.Stats(ctx, table.Bronze); err != nil || st2.Snapshots > st.Snapshots+1 {
		t.Fatalf("second pass: %d snapshots after %d (%v)", st2.Snapshots, st.Snapshots, err)
	}
}
