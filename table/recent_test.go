package table_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/table"
)

// TestTakeAppendedHandsOverCommittedRows: the downstream query takes the
// rows of an append this Lake just committed from memory, equal (schema,
// field ids, values) to what a scan of the files returns; what it takes is
// forgotten, together with the earlier appends of the table it passed; an
// append over the byte bound is not kept, nor an append to a table nobody
// follows; and every reference is released (a checked allocator ends at
// zero bytes).
func TestTakeAppendedHandsOverCommittedRows(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	dir := t.TempDir()
	l, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	l.FollowAppends(table.Bronze)
	// Broker times of the first and the last append straddle midnight: two
	// files each, one per day; the others are one file each.
	var snaps []int64
	for i, r := range []arrow.RecordBatch{
		bronzeRecordWith(mem, 0, 0, 200), bronzeRecordWith(mem, 0, 200, 200),
		bronzeRecordWith(mem, 1, 0, 50), bronzeRecordWith(mem, 1, 50, 50),
	} {
		res, err := l.CommitBatch(ctx, table.Bronze, batchOf("bronze", int64(i), r))
		r.Release()
		if err != nil || !res.Committed || res.SnapshotID == 0 {
			t.Fatalf("commit %d: %+v %v", i, res, err)
		}
		snaps = append(snaps, res.SnapshotID)
	}
	want := make([][]string, len(snaps))
	var scanned *arrow.Schema
	for i, s := range snaps {
		recs, err := l.ReadAppended(ctx, table.Bronze, s)
		if err != nil {
			t.Fatal(err)
		}
		scanned = recs[0].Schema()
		want[i] = appendRows(t, recs)
	}

	// Without the files, only the rows kept in memory can be read.
	files, err := l.DataFiles(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	if len(files.Paths) != 6 {
		t.Fatalf("%d data files, want 6", len(files.Paths))
	}
	for _, p := range files.Paths {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := l.TakeAppended(ctx, table.Bronze, snaps[0])
	if err != nil {
		t.Fatalf("take append 0 with its files removed: %v (not kept in memory)", err)
	}
	if !recs[0].Schema().Equal(scanned) || fmt.Sprint(recs[0].Schema().Fields()) != fmt.Sprint(scanned.Fields()) {
		t.Fatalf("kept rows' schema\n%s\nwant the scan's\n%s", recs[0].Schema(), scanned)
	}
	if got := appendRows(t, recs); !slices.Equal(got, want[0]) {
		t.Fatalf("kept rows of append 0 (two files) differ from the files': %d rows against %d", len(got), len(want[0]))
	}
	if _, err := l.TakeAppended(ctx, table.Bronze, snaps[0]); err == nil {
		t.Fatal("append 0 taken twice from memory: a take must hand the rows over")
	}
	recs, err = l.TakeAppended(ctx, table.Bronze, snaps[2])
	if err != nil {
		t.Fatalf("take append 2: %v", err)
	}
	if got := appendRows(t, recs); !slices.Equal(got, want[2]) {
		t.Fatal("kept rows of append 2 differ from the files'")
	}
	if _, err := l.TakeAppended(ctx, table.Bronze, snaps[1]); err == nil {
		t.Fatal("append 1 still kept after append 2 was taken")
	}
	// Append 3 is never taken: Close releases it.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)

	// An append over the byte bound is read from its files.
	small, err := table.Open(ctx, table.Config{Dir: t.TempDir(), RecentAppendBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if err := small.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	small.FollowAppends(table.Bronze)
	r := bronzeRecordWith(mem, 0, 0, 200)
	res, err := small.CommitBatch(ctx, table.Bronze, batchOf("bronze", 0, r))
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	files, err = small.DataFiles(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files.Paths {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := small.TakeAppended(ctx, table.Bronze, res.SnapshotID); err == nil {
		t.Fatal("an append of more than RecentAppendBytes was kept in memory")
	}
	if _, err := small.TakeAppended(ctx, table.Bronze, 12345); !errors.Is(err, table.ErrSnapshotNotFound) {
		t.Fatalf("take an unknown snapshot: %v, want ErrSnapshotNotFound", err)
	}

	// A table nobody follows: its appends are not kept at all.
	unfollowed, err := table.Open(ctx, table.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer unfollowed.Close()
	if err := unfollowed.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	r = bronzeRecordWith(mem, 0, 0, 200)
	if _, err := unfollowed.CommitBatch(ctx, table.Bronze, batchOf("bronze", 0, r)); err != nil {
		t.Fatal(err)
	}
	r.Release()
	mem.AssertSize(t, 0) // nothing of the append is held after the commit
}

// appendRows renders recs' rows (released here), sorted: within one append
// the files come in any order.
func appendRows(t *testing.T, recs []arrow.RecordBatch) []string {
	t.Helper()
	var out []string
	for _, r := range recs {
		for i := range int(r.NumRows()) {
			var b strings.Builder
			for _, c := range r.Columns() {
				b.WriteString(c.ValueStr(i))
				b.WriteByte('|')
			}
			out = append(out, b.String())
		}
		r.Release()
	}
	if len(out) == 0 {
		t.Fatal("no rows")
	}
	slices.Sort(out)
	return out
}
