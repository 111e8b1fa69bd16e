package table_test

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/table"
)

// TestScanEach: ScanEach sees exactly the rows Scan returns, calls nothing
// on a table without a snapshot, and stops at fn's error, returned as is.
func TestScanEach(t *testing.T) {
	l := openLake(t, table.Config{Dir: t.TempDir()})
	ctx := context.Background()
	calls := 0
	if err := l.ScanEach(ctx, table.Bronze, func(arrow.RecordBatch) error { calls++; return nil }); err != nil || calls != 0 {
		t.Fatalf("empty table: %d calls, err %v; want 0, nil", calls, err)
	}
	for id := int64(1); id <= 3; id++ {
		rec := bronzeRecord(int32(id%2), id*100, 50)
		mustCommit(t, l, table.Bronze, batchOf("bronze", id, rec))
		rec.Release()
	}
	wantRows, wantOffsets := scanOffsets(t, l, table.Bronze)
	var rows int64
	offsets := map[int64]int{}
	err := l.ScanEach(ctx, table.Bronze, func(rec arrow.RecordBatch) error {
		rows += rec.NumRows()
		col := rec.Column(rec.Schema().FieldIndices("broker_offset")[0]).(*array.Int64)
		for i := range col.Len() {
			offsets[col.Value(i)]++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ScanEach: %v", err)
	}
	if rows != wantRows || rows != 150 || len(offsets) != len(wantOffsets) {
		t.Fatalf("ScanEach saw %d rows, %d offsets; Scan %d rows, %d offsets; want 150", rows, len(offsets), wantRows, len(wantOffsets))
	}
	for off, n := range wantOffsets {
		if offsets[off] != n {
			t.Errorf("offset %d: ScanEach %d times, Scan %d", off, offsets[off], n)
		}
	}
	stop := errors.New("stop")
	calls = 0
	if err := l.ScanEach(ctx, table.Bronze, func(arrow.RecordBatch) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("fn error: %d calls, err %v; want 1, the error as is", calls, err)
	}
}

// TestScanColumns: ScanColumns hands fn batches of the named columns only,
// of at most scanColumnsBatch rows, with every row.
func TestScanColumns(t *testing.T) {
	l := openLake(t, table.Config{Dir: t.TempDir()})
	ctx := context.Background()
	rec := bronzeRecord(0, 0, 10_000)
	mustCommit(t, l, table.Bronze, batchOf("bronze", 1, rec))
	rec.Release()
	var rows, most int64
	err := l.ScanColumns(ctx, table.Bronze, []string{"broker_offset", "ingest_ts"}, func(rec arrow.RecordBatch) error {
		rows += rec.NumRows()
		most = max(most, rec.NumRows())
		var names []string
		for _, f := range rec.Schema().Fields() {
			names = append(names, f.Name)
		}
		if len(names) != 2 || names[0] != "broker_offset" || names[1] != "ingest_ts" {
			t.Fatalf("columns: got %v, want [broker_offset ingest_ts]", names)
		}
		return nil
	})
	if err != nil || rows != 10_000 || most > 4096 {
		t.Fatalf("ScanColumns: %d rows, batches up to %d, err %v; want 10000, at most 4096, nil", rows, most, err)
	}
}
