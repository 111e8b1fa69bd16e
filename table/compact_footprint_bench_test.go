package table_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/ingest/replay"
	"lakehouse/table"
)

// BenchmarkCompactTierFootprint: a soak's memory peak, reproduced. An
// hour-long soak reached its high-water mark, far above its sampled RSS, at
// a bronze merge of 8 tier-4 files into one; this merges 8 files of 15,300
// generated events (the real stream's shapes, 140 MB of raw JSON) beside
// 22 MiB of other live heap (the appliance's at 35 ev/s, which sets the
// collector's goal before the merge) and reports, per merge, how far the
// live heap and the Go runtime's resident memory (mapped minus handed back)
// rose above their level before it, and what the merge allocated. Setting
// up the files is not timed.
//
// It is how mergeGroup's shape was chosen: one file after the other on one
// goroutine, 256-row batches with one queued, row groups of 2,048 rows and
// pages of 512 KiB hold less than half the live heap and resident memory
// of iceberg-go's ExecuteCompactionGroup (one reader, 1,024-row batches
// with two queued, row groups of 8,192 rows) for about the same bytes
// allocated, and halving GOGC during the merge (gcpace.Pace) lowers the
// resident memory further. Larger pages hold more; smaller ones make the
// files larger. A pooling allocator or arrow-go's C allocator moved the
// buffers out of the Go heap but not out of the process.
func BenchmarkCompactTierFootprint(b *testing.B) {
	ctx := context.Background()
	const files, rows = 8, 15_300
	var live, resident, alloc uint64
	ballast := make([]*[1 << 20]byte, 22)
	for i := range ballast {
		ballast[i] = new([1 << 20]byte)
	}
	defer runtime.KeepAlive(ballast)
	for b.Loop() {
		b.StopTimer()
		l := openLake(b, table.Config{Dir: b.TempDir()})
		evs := replay.Generate(1, files*rows).Events
		for i := range files {
			rec := eventsBronzeRecord(int64(i)*rows, evs[i*rows:(i+1)*rows], false)
			mustCommit(b, l, table.Bronze, batchOf("bronze", int64(i+1), rec))
			rec.Release()
		}
		// Nothing of the set-up stays live; the ballast is.
		evs = nil
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

// eventsBronzeRecord is the bronze rows of raw events from offset off, in
// one day partition: all in partition 0 without keys, or, keyed, spread
// over four partitions with a key on two rows of three (and an ingest time
// apart from the broker's).
func eventsBronzeRecord(off int64, evs [][]byte, keyed bool) arrow.RecordBatch {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer bld.Release()
	for i, e := range evs {
		o := off + int64(i)
		ts := arrow.Timestamp(baseTime.Add(time.Hour + time.Duration(o)*time.Millisecond).UnixMicro())
		part, ingest := int32(0), ts
		if keyed {
			part, ingest = int32(o%4), ts+1
		}
		bld.Field(0).(*array.Int32Builder).Append(part)
		bld.Field(1).(*array.Int64Builder).Append(o)
		bld.Field(2).(*array.TimestampBuilder).Append(ts)
		if keyed && o%3 != 0 {
			bld.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("key-%d", o))
		} else {
			bld.Field(3).AppendNull()
		}
		bld.Field(4).(*array.StringBuilder).Append(string(e))
		bld.Field(5).(*array.TimestampBuilder).Append(ingest)
	}
	return bld.NewRecordBatch()
}
