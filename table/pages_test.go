package table_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table"
)

// TestPagesBoundedWhateverTheBatch: bronze's Parquet pages stay small
// however many large values one batch holds, so the Parquet reader (which
// refuses a page over 256 MiB uncompressed) and DuckDB can always read
// them. With iceberg-go's own page-row-limit (20,000) the whole batch of
// 200 KB values lands in one page, which grows with the batch: 1,300 such
// events were past the reader's limit and crash-looped silver.
func TestPagesBoundedWhateverTheBatch(t *testing.T) {
	const rows, valueBytes = 300, 200 << 10
	limit, err := strconv.Atoi(table.PageRowLimit)
	if err != nil {
		t.Fatal(err)
	}
	// A page is cut at the data page size (1 MiB) after a write batch of
	// page-row-limit values.
	bound := int64(1<<20 + limit*(valueBytes+4))
	tests := []struct {
		name    string
		props   map[string]string
		wantMax func(got int64) error
	}{
		{"default", nil, func(got int64) error {
			if got > bound {
				return fmt.Errorf("largest page %d bytes, want at most %d", got, bound)
			}
			return nil
		}},
		{"iceberg-go page-row-limit", map[string]string{icetable.ParquetPageRowLimitKey: "20000"}, func(got int64) error {
			if got < rows*valueBytes {
				return fmt.Errorf("largest page %d bytes, want the whole batch (at least %d): the test no longer shows the cause", got, rows*valueBytes)
			}
			return nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			l := openLake(t, table.Config{Dir: t.TempDir(), Props: tc.props})
			rec := largeBronzeRecord(rows, valueBytes)
			defer rec.Release()
			mustCommit(t, l, table.Bronze, batchOf("bronze", 0, rec))
			files, err := l.DataFiles(ctx, table.Bronze)
			if err != nil {
				t.Fatal(err)
			}
			var largest int64
			for _, p := range files.Paths {
				largest = max(largest, largestPage(t, p))
			}
			t.Logf("%d rows of %d bytes in %d files: largest page %d bytes", rows, valueBytes, len(files.Paths), largest)
			if err := tc.wantMax(largest); err != nil {
				t.Fatal(err)
			}
			// And the Parquet reader reads every row back.
			if n, _ := scanOffsets(t, l, table.Bronze); n != rows {
				t.Fatalf("rows read back: got %d, want %d", n, rows)
			}
		})
	}
}

// largeBronzeRecord builds n bronze rows whose values are size bytes of
// JSON (one day partition).
func largeBronzeRecord(n, size int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer b.Release()
	ts := arrow.Timestamp(baseTime.Add(-12 * 3600e9).UnixMicro())
	for i := range n {
		b.Field(0).(*array.Int32Builder).Append(0)
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		b.Field(2).(*array.TimestampBuilder).Append(ts)
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("k%d", i))
		head := fmt.Sprintf(`{"meta":{"id":"%d"},"type":"edit","comment":"`, i)
		b.Field(4).(*array.StringBuilder).Append(head + strings.Repeat("x", size-len(head)-2) + `"}`)
		b.Field(5).(*array.TimestampBuilder).Append(ts)
	}
	return b.NewRecordBatch()
}

// largestPage returns the largest uncompressed page (data or dictionary)
// in the Parquet file at path.
func largestPage(t *testing.T, path string) int64 {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var largest int64
	for g := range r.NumRowGroups() {
		rg := r.RowGroup(g)
		for c := range rg.NumColumns() {
			pr, err := rg.GetColumnPageReader(c)
			if err != nil {
				t.Fatal(err)
			}
			for pr.Next() {
				// A dictionary page declares no size of its own: its
				// bytes are the decompressed page.
				pg := pr.Page()
				largest = max(largest, int64(len(pg.Data())))
				if p, ok := pg.(interface{ UncompressedSize() int32 }); ok {
					largest = max(largest, int64(p.UncompressedSize()))
				}
			}
			if err := pr.Err(); err != nil {
				t.Fatalf("%s row group %d column %d: %v", path, g, c, err)
			}
		}
	}
	return largest
}

// TestSnapshotRecordsAddedBytes: a CommitBatch snapshot records the
// in-memory size of the rows it added (what a reader of the snapshot holds),
// which a batch's own properties cannot overwrite; a snapshot without it
// falls back to its files' size.
func TestSnapshotRecordsAddedBytes(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, table.Config{Dir: t.TempDir()})
	rec := largeBronzeRecord(20, 10_000)
	defer rec.Release()
	b := batchOf("bronze", 0, rec)
	b.Props = map[string]string{"added-bytes": "1", table.SummaryAddedBytes: "2"}
	mustCommit(t, l, table.Bronze, b)
	snaps, err := l.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("appends: got %d (%v), want 1", len(snaps), err)
	}
	got := snaps[0].AddedBytes()
	if got < 20*10_000 || got > 2*20*10_000 {
		t.Errorf("added bytes: got %d, want about the %d bytes of values", got, 20*10_000)
	}
	files, _ := strconv.ParseInt(snaps[0].Summary["added-files-size"], 10, 64)
	if files <= 0 || files*10 > got {
		t.Errorf("added-files-size %d: want far below the rows' %d bytes (the values compress)", files, got)
	}
	old := table.Snapshot{Summary: map[string]string{"added-files-size": "123"}}
	if got := old.AddedBytes(); got != 123 {
		t.Errorf("snapshot without %s: got %d, want its added-files-size 123", table.SummaryAddedBytes, got)
	}
}
