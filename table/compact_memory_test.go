package table_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/table"
)

// TestCompactMemoryBounded: merging a tier of large files holds a bounded
// number of rows in memory, not the group. Eight files of 12,000 rows of
// 2 KB values (190 MB decoded, small on disk: the values compress) are
// merged into one; the live heap during Compact may exceed the level before
// it by at most 40 MiB. With iceberg-go's defaults (a scan worker per core,
// batches of 131,072 rows, 64 batches queued for the writer, row groups of
// a million rows) it grew by 142 MiB here, and far more at high rates;
// through iceberg-go's scan
// pipeline with bounds (one reader, 1,024-row batches, two queued, 8,192-row
// row groups) by 62; with Compact's own streaming merge (mergeGroup) by 16
// to 23.
func TestCompactMemoryBounded(t *testing.T) {
	l := openLake(t, table.Config{Dir: t.TempDir()})
	ctx := context.Background()
	const files, rows, size = 8, 12_000, 2_000
	for id := int64(1); id <= files; id++ {
		rec := paddedBronzeRecord((id-1)*rows, rows, size)
		mustCommit(t, l, table.Bronze, batchOf("bronze", id, rec))
		rec.Release()
	}
	runtime.GC()
	before := heapLiveAtLastGC()
	stop, peakc := make(chan struct{}), make(chan uint64, 1)
	go func() {
		peak := before
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				peakc <- peak
				return
			case <-tick.C:
				peak = max(peak, heapLiveAtLastGC())
			}
		}
	}()
	res, err := l.Compact(ctx, table.Bronze, table.CompactPolicy{TargetBytes: 256 << 20, FanIn: files})
	close(stop)
	peak := <-peakc
	if err != nil {
		t.Fatal(err)
	}
	if res.RowsMoved != files*rows {
		t.Fatalf("inconclusive: compaction moved %d rows, want all %d (one group of the %d files)", res.RowsMoved, files*rows, files)
	}
	grew := int64(peak) - int64(before)
	t.Logf("compacting %d files of %d rows of %d bytes (%d MB decoded): live heap %d MiB before, peak %d MiB (+%d MiB)",
		files, rows, size, files*rows*size/1_000_000, before>>20, peak>>20, grew>>20)
	if grew > 40<<20 {
		t.Errorf("live heap grew by %d MiB while compacting, want at most 40 MiB", grew>>20)
	}
}

// heapLiveAtLastGC is the heap the last collection marked live
// (/gc/heap/live:bytes): cheap enough to sample while a compaction runs,
// where a settled reading (the root package's settledLiveHeap) would stop it.
func heapLiveAtLastGC() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// paddedBronzeRecord is n bronze rows from offset off in partition 0 whose
// values are about size bytes (compressible JSON).
func paddedBronzeRecord(off int64, n, size int) arrow.RecordBatch {
	runtime.GC()
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer b.Release()
	pad := strings.Repeat("x", size)
	for i := range n {
		o := off + int64(i)
		ts := arrow.Timestamp(baseTime.Add(time.Hour + time.Duration(o)*time.Millisecond).UnixMicro()) // one day partition
		b.Field(0).(*array.Int32Builder).Append(0)
		b.Field(1).(*array.Int64Builder).Append(o)
		b.Field(2).(*array.TimestampBuilder).Append(ts)
		b.Field(3).AppendNull()
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf(`{"meta":{"id":"0-%d"},"type":"edit","comment":"%s"}`, o, pad))
		b.Field(5).(*array.TimestampBuilder).Append(ts)
	}
	return b.NewRecordBatch()
}
