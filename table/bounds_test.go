package table_test

import (
	"context"
	"testing"
	"time"

	"lakehouse/table"
)

// TestDataFilesWithBounds: each live file's range of a timestamp column is
// read from its manifest entry, exact to the microsecond, with its record
// count; a column that is not a timestamp is refused.
func TestDataFilesWithBounds(t *testing.T) {
	l := openLake(t, table.Config{Dir: t.TempDir()})
	ctx := context.Background()
	for id := int64(1); id <= 2; id++ {
		rec := bronzeRecord(0, (id-1)*100, 100) // broker_ts = baseTime + offset seconds
		mustCommit(t, l, table.Bronze, batchOf("bronze", id, rec))
		rec.Release()
	}
	f, err := l.DataFilesWithBounds(ctx, table.Bronze, "broker_ts")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Bounds) != len(f.Paths) || len(f.Paths) < 2 {
		t.Fatalf("%d paths, %d bounds; want at least 2 of each", len(f.Paths), len(f.Bounds))
	}
	// Rows are one a second from baseTime: a file's bounds give its count.
	var rows int64
	lo, hi := f.Bounds[0].Lower, f.Bounds[0].Upper
	for _, b := range f.Bounds {
		if !b.OK {
			t.Fatalf("bounds %+v: want OK", b)
		}
		if n := int64(b.Upper.Sub(b.Lower)/time.Second) + 1; n != b.Rows {
			t.Errorf("bounds %v..%v span %d rows, the file holds %d", b.Lower, b.Upper, n, b.Rows)
		}
		rows += b.Rows
		lo, hi = minTime(lo, b.Lower), maxTime(hi, b.Upper)
	}
	if want := baseTime.UTC(); rows != 200 || !lo.Equal(want) || !hi.Equal(want.Add(199*time.Second)) {
		t.Errorf("files hold %d rows from %v to %v, want 200 from %v to %v", rows, lo, hi, want, want.Add(199*time.Second))
	}
	if _, err := l.DataFilesWithBounds(ctx, table.Bronze, "broker_offset"); err == nil {
		t.Error("bounds of broker_offset (not a timestamp): no error")
	}
	if _, err := l.DataFilesWithBounds(ctx, table.Bronze, "nope"); err == nil {
		t.Error("bounds of a missing column: no error")
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TestDataFilesWithRange: each live file's range of an integer column
// (bronze's broker_offset) is read from its manifest entry; a column that
// is not an integer is refused.
func TestDataFilesWithRange(t *testing.T) {
	l := openLake(t, table.Config{Dir: t.TempDir()})
	ctx := context.Background()
	for id := int64(1); id <= 2; id++ {
		rec := bronzeRecord(0, (id-1)*100, 100)
		mustCommit(t, l, table.Bronze, batchOf("bronze", id, rec))
		rec.Release()
	}
	f, err := l.DataFilesWithRange(ctx, table.Bronze, "broker_offset")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Ranges) != len(f.Paths) || len(f.Paths) < 2 {
		t.Fatalf("%d paths, %d ranges; want at least 2 of each", len(f.Paths), len(f.Ranges))
	}
	// Offsets are dense and one per row: the ranges cover 0..199 once.
	var span int64
	lo, hi := f.Ranges[0].Lower, f.Ranges[0].Upper
	for _, r := range f.Ranges {
		if !r.OK {
			t.Fatalf("range %+v: want OK", r)
		}
		span += r.Upper - r.Lower + 1
		lo, hi = min(lo, r.Lower), max(hi, r.Upper)
	}
	if lo != 0 || hi != 199 || span != 200 {
		t.Errorf("ranges %v: from %d to %d spanning %d offsets, want 0 to 199 spanning 200", f.Ranges, lo, hi, span)
	}
	if _, err := l.DataFilesWithRange(ctx, table.Bronze, "broker_ts"); err == nil {
		t.Error("range of broker_ts (not an integer): no error")
	}
}
