package table_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/ingest"
	"lakehouse/table"
)

// BenchmarkCompactTierFootprint: the soak's memory peak, reproduced. The
// hour of benchmarks/soak-8709538.md reached its high-water mark (289 MiB
// against 182 sampled) at a bronze merge of 8 tier-4 files (122,409 rows)
// into one; this merges 8 files of 15,300 generated events (the real
// stream's shapes, 140 MB of raw JSON) and reports, per merge, how far the
// live heap and the Go runtime's resident memory (mapped minus handed back)
// rose above their level before it, and what the merge allocated. On this
// machine (2026-12-02, code 2bb9d12): live +46 MiB, resident +89 MiB, 843
// MiB allocated in 26 collections, 0.48 s: the merge allocates six times
// its data in short-lived Arrow buffers, so the collector's headroom
// doubles its live peak. Measured by hand with other bounds: batches of
// 256 rows +31 / +66 MiB (0.55 s); 256 rows, one queued batch and row
// groups of 1,024 rows +25 / +53 (0.75 s); GOGC 25 during the merge with
// today's bounds +38 / +53 (0.71 s); a pooling allocator handed to
// iceberg-go through the context (compute.WithAllocator: its reader and
// writer take theirs from there) cut the allocations to 324 MiB but the peaks
// only to +44 / +89: the peak is what the merge holds live (the Parquet
// reader's column chunks and builders, the writer's buffered row group), not
// its garbage. Setting up the files is not timed.
func BenchmarkCompactTierFootprint(b *testing.B) {
	ctx := context.Background()
	const files, rows = 8, 15_300
	var live, resident, alloc uint64
	for b.Loop() {
		b.StopTimer()
		l := openLake(b, table.Config{Dir: b.TempDir()})
		evs := ingest.Generate(1, files*rows).Events
		for i := range files {
			rec := eventsBronzeRecord(int64(i)*rows, evs[i*rows:(i+1)*rows])
			mustCommit(b, l, table.Bronze, batchOf("bronze", int64(i+1), rec))
			rec.Release()
		}
		// Nothing of the set-up stays live: a held input would raise the
		// collector's goal and let the merge's garbage pile up under it.
		runtime.GC()
		debug.FreeOSMemory()
		live0, res0 := goFootprint()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		stop := watchFootprint()
		b.StartTimer()
		res, err := l.Compact(ctx, table.Bronze, table.CompactPolicy{TargetBytes: 128 << 20, FanIn: files})
		b.StopTimer()
		peakLive, peakRes := stop()
		runtime.ReadMemStats(&ms1)
		if err != nil {
			b.Fatal(err)
		}
		if res.RowsMoved != files*rows {
			b.Fatalf("moved %d rows, want %d", res.RowsMoved, files*rows)
		}
		live += peakLive - min(live0, peakLive)
		resident += peakRes - min(res0, peakRes)
		alloc += ms1.TotalAlloc - ms0.TotalAlloc
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(live)/n/(1<<20), "live-MiB/merge")
	b.ReportMetric(float64(resident)/n/(1<<20), "resident-MiB/merge")
	b.ReportMetric(float64(alloc)/n/(1<<20), "alloc-MiB/merge")
}

// goFootprint is the live heap after the last collection and the Go
// runtime's memory the operating system holds for it.
func goFootprint() (live, resident uint64) {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64() - s[2].Value.Uint64()
}

// watchFootprint samples goFootprint every 2 ms until the returned function
// is called, which returns the peaks.
func watchFootprint() func() (live, resident uint64) {
	var (
		wg   sync.WaitGroup
		l, r uint64
	)
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				nl, nr := goFootprint()
				l, r = max(l, nl), max(r, nr)
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		wg.Wait()
		return l, r
	}
}

// eventsBronzeRecord is the bronze rows of raw events from offset off in
// partition 0, in one day partition.
func eventsBronzeRecord(off int64, evs [][]byte) arrow.RecordBatch {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer bld.Release()
	for i, e := range evs {
		o := off + int64(i)
		ts := arrow.Timestamp(baseTime.Add(time.Hour + time.Duration(o)*time.Millisecond).UnixMicro())
		bld.Field(0).(*array.Int32Builder).Append(0)
		bld.Field(1).(*array.Int64Builder).Append(o)
		bld.Field(2).(*array.TimestampBuilder).Append(ts)
		bld.Field(3).AppendNull()
		bld.Field(4).(*array.StringBuilder).Append(string(e))
		bld.Field(5).(*array.TimestampBuilder).Append(ts)
	}
	return bld.NewRecordBatch()
}
