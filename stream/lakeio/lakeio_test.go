package lakeio

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/stream"
	"lakehouse/table"
)

func openLake(t *testing.T) *table.Lake {
	t.Helper()
	ctx := context.Background()
	lake, err := table.Open(ctx, table.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lake.Close() })
	if err := lake.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	return lake
}

// bronzeRows builds n bronze rows with offsets from..from+n-1.
func bronzeRows(from int64, n int) arrow.RecordBatch {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer rb.Release()
	for i := 0; i < n; i++ {
		rb.Field(0).(*array.Int32Builder).Append(0)
		rb.Field(1).(*array.Int64Builder).Append(from + int64(i))
		rb.Field(2).(*array.TimestampBuilder).Append(1)
		rb.Field(3).(*array.StringBuilder).AppendNull()
		rb.Field(4).(*array.StringBuilder).Append("{}")
		rb.Field(5).(*array.TimestampBuilder).Append(1)
	}
	return rb.NewRecordBatch()
}

func offsetsOf(t *testing.T, recs []arrow.RecordBatch) []int64 {
	t.Helper()
	var out []int64
	for _, r := range recs {
		col := r.Column(1).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			out = append(out, col.Value(i))
		}
		r.Release()
	}
	return out
}

func TestSourceReadsSnapshotsInOrder(t *testing.T) {
	ctx := context.Background()
	lake := openLake(t)
	sizes := []int{3, 0, 5, 2} // an empty batch commits its marker only
	var off int64
	for i, n := range sizes {
		rec := bronzeRows(off, n)
		off += int64(n)
		if _, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", ID: int64(i), Offsets: "x",
			Records: []arrow.RecordBatch{rec}}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	src := NewSource(lake, table.Bronze)
	start, err := src.Earliest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lag, err := src.Lag(ctx, start); err != nil || lag != 3+5+2 {
		t.Errorf("lag: got %d (%v), want 10", lag, err)
	}
	tests := []struct {
		max      int64
		wantN    int64
		wantOffs int // rows read
	}{
		{max: 4, wantN: 3, wantOffs: 3}, // the next snapshot (5 rows) would pass max
		{max: 1, wantN: 5, wantOffs: 5}, // at least one snapshot, even over max
		{max: 100, wantN: 2, wantOffs: 2},
	}
	var next int64
	for i, tc := range tests {
		end, n, err := src.Plan(ctx, start, stream.Limit{Units: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		if n != tc.wantN {
			t.Errorf("plan %d: got %d units, want %d", i, n, tc.wantN)
		}
		recs, _, err := src.Read(ctx, start, end)
		if err != nil {
			t.Fatal(err)
		}
		offs := offsetsOf(t, recs)
		if len(offs) != tc.wantOffs {
			t.Errorf("read %d: got %d rows, want %d", i, len(offs), tc.wantOffs)
		}
		for _, o := range offs {
			if o != next {
				t.Errorf("read %d: got offset %d, want %d", i, o, next)
			}
			next++
		}
		start = end
	}
	if _, n, err := src.Plan(ctx, start, stream.Limit{Units: 10}); err != nil || n != 0 {
		t.Errorf("plan at the end: got %d units (%v), want 0", n, err)
	}
	if _, _, err := src.Plan(ctx, SnapshotOffset{Snapshot: 12345}.Offset(), stream.Limit{Units: 10}); !errors.Is(err, stream.ErrSourceBehind) {
		t.Errorf("unknown snapshot: got %v, want ErrSourceBehind", err)
	}
}

// TestSourcePlanBytes: a table source takes whole snapshots while their
// rows' in-memory size (not their compressed files: these compress to
// almost nothing) fits the byte cap, and at least one.
func TestSourcePlanBytes(t *testing.T) {
	ctx := context.Background()
	lake := openLake(t)
	var off int64
	var sizes []int64
	for i, n := range []int{100, 100, 100, 300} {
		rec := paddedBronzeRows(off, n, 10_000)
		off += int64(n)
		if _, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", ID: int64(i), Offsets: "x",
			Records: []arrow.RecordBatch{rec}}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	snaps, err := lake.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range snaps {
		sizes = append(sizes, sn.AddedBytes())
		if files, _ := strconv.ParseInt(sn.Summary["added-files-size"], 10, 64); files*10 > sn.AddedBytes() {
			t.Fatalf("snapshot %d: files of %d bytes for %d bytes of rows: the test needs rows that compress well", sn.ID, files, sn.AddedBytes())
		}
	}
	if sizes[0] < 100*10_000 || sizes[3] < 3*sizes[0] {
		t.Fatalf("added bytes %v: want at least 1,000,000 for 100 rows of 10 KB", sizes)
	}
	src := NewSource(lake, table.Bronze)
	start, _ := src.Earliest(ctx)
	// Two snapshots fit, the third would pass the cap; the fourth alone is
	// over it and still makes a batch.
	limit := stream.Limit{Units: 1_000_000, Bytes: sizes[0] + sizes[1] + sizes[2]/2}
	var got []int64
	for {
		end, n, err := src.Plan(ctx, start, limit)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		got = append(got, n)
		start = end
	}
	if want := []int64{200, 100, 300}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows per batch: got %v, want %v", got, want)
	}
}

// paddedBronzeRows builds n bronze rows whose values are size bytes.
func paddedBronzeRows(from int64, n, size int) arrow.RecordBatch {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer rb.Release()
	pad := strings.Repeat("x", size)
	for i := 0; i < n; i++ {
		rb.Field(0).(*array.Int32Builder).Append(0)
		rb.Field(1).(*array.Int64Builder).Append(from + int64(i))
		rb.Field(2).(*array.TimestampBuilder).Append(1)
		rb.Field(3).(*array.StringBuilder).AppendNull()
		rb.Field(4).(*array.StringBuilder).Append(pad)
		rb.Field(5).(*array.TimestampBuilder).Append(1)
	}
	return rb.NewRecordBatch()
}

func TestSinkCommitsOnceWithProps(t *testing.T) {
	ctx := context.Background()
	lake := openLake(t)
	sink := NewSink(lake, table.Bronze, func(b stream.Batch) map[string]string {
		return StatsProps(stream.ProcessStats{DroppedByWatermark: 2, Duplicates: 3}, b.ID)
	})
	b := stream.Batch{Query: "q", QueryID: "id-1", ID: 0, End: "e0"}
	for i, want := range []bool{true, false} {
		rec := bronzeRows(0, 2)
		res, err := sink.Commit(ctx, b, []arrow.RecordBatch{rec})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if res.Committed != want {
			t.Errorf("commit %d: got committed %v, want %v", i, res.Committed, want)
		}
	}
	m, ok, err := sink.LastCommitted(ctx, "q")
	if err != nil || !ok || m.Batch != 0 || m.End != "e0" || m.QueryID != "id-1" {
		t.Errorf("marker: got %+v %v %v, want batch 0, end e0, query id id-1", m, ok, err)
	}
	snaps, err := lake.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots: got %d (%v), want 1", len(snaps), err)
	}
	st, version, ok := StatsFromSummary(snaps[0].Summary)
	if !ok || st.DroppedByWatermark != 2 || st.Duplicates != 3 || version != 0 {
		t.Errorf("summary stats: got %+v v%d %v", st, version, ok)
	}
}
