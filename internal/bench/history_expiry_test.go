package bench

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/table"
)

func bronzeRows(off int64, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer b.Release()
	day := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for i := range n {
		o := off + int64(i)
		ts := arrow.Timestamp(day.Add(time.Duration(o) * time.Second).UnixMicro())
		b.Field(0).(*array.Int32Builder).Append(0)
		b.Field(1).(*array.Int64Builder).Append(o)
		b.Field(2).(*array.TimestampBuilder).Append(ts)
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("k%d", o))
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf(`{"meta":{"id":"%d"},"type":"edit"}`, o))
		b.Field(5).(*array.TimestampBuilder).Append(ts)
	}
	return b.NewRecordBatch()
}

// TestDiskUsageLeavesOutFilesAwaitingExpiry: after a compaction replaced a
// table's small files, diskUsage counts them in Total and reports exactly
// their bytes as AwaitingExpiry (the current snapshot holds only the merged
// file), and the projection grows by the rest alone.
func TestDiskUsageLeavesOutFilesAwaitingExpiry(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 4; id++ {
		b := table.Batch{Query: "bronze", ID: id, Offsets: fmt.Sprintf(`{"0":%d}`, id*50), Records: []arrow.RecordBatch{bronzeRows((id-1)*50, 50)}}
		if _, err := l.CommitBatch(ctx, table.Bronze, b); err != nil {
			t.Fatal(err)
		}
	}
	dataFiles := func() (n int, bytes int64) {
		t.Helper()
		root := filepath.Join(dir, "warehouse", "bronze.db", "recentchange", "data")
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			n++
			bytes += info.Size()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, bytes
	}
	smallN, small := dataFiles()
	before, err := diskUsage(ctx, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if before.AwaitingExpiry != 0 {
		t.Fatalf("before any compaction: %d bytes awaiting expiry, want 0", before.AwaitingExpiry)
	}
	res, err := l.Compact(ctx, table.Bronze, table.CompactPolicy{TargetBytes: 64 << 20, FanIn: 2})
	if err != nil {
		t.Fatal(err)
	}
	allN, all := dataFiles()
	if res.RowsMoved != 200 || allN != smallN+1 {
		t.Fatalf("inconclusive: compaction moved %d rows; %d data files before, %d after", res.RowsMoved, smallN, allN)
	}
	after, err := diskUsage(ctx, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if after.AwaitingExpiry != small {
		t.Fatalf("after compaction: %d bytes awaiting expiry, want the %d small files' %d bytes (data files now %d bytes)", after.AwaitingExpiry, smallN, small, all)
	}
	plan := DiskPlan{FSBytes: 1 << 40, RealPerDay: 1}
	if p, want := projectDisk(after, 1, 1, plan), float64(after.Total-after.AwaitingExpiry); p.OtherPerDay != want {
		t.Fatalf("projection grows %v a day, want %v (awaiting expiry left out)", p.OtherPerDay, want)
	}
}
