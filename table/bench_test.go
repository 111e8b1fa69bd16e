package table_test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/internal/sample"
	"lakehouse/table"
)

// sampleEvents returns the 50 recorded Wikimedia events (raw JSON lines).
func sampleEvents(tb testing.TB) []string {
	tb.Helper()
	var out []string
	for _, e := range sample.Events() {
		out = append(out, string(e))
	}
	return out
}

// realBronze builds n bronze rows whose values are the recorded events.
func realBronze(events []string, off int64, n int) (arrow.RecordBatch, int64) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer b.Release()
	var bytes int64
	now := time.Now()
	for i := range n {
		o := off + int64(i)
		ts := arrow.Timestamp(now.Add(time.Duration(o) * time.Millisecond).UnixMicro())
		v := events[int(o)%len(events)]
		bytes += int64(len(v)) + 4 + 8 + 8 + 8
		b.Field(0).(*array.Int32Builder).Append(int32(o % 4))
		b.Field(1).(*array.Int64Builder).Append(o)
		b.Field(2).(*array.TimestampBuilder).Append(ts)
		b.Field(3).AppendNull()
		b.Field(4).(*array.StringBuilder).Append(v)
		b.Field(5).(*array.TimestampBuilder).Append(ts)
	}
	return b.NewRecordBatch(), bytes
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func pct(d []time.Duration, p float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return float64(s[i].Microseconds()) / 1000
}

// BenchmarkCommitLatency commits b.N small appends (10 real events each) to
// bronze on local disk with the default table properties, and reports commit
// latency p50/p99 over the first 100 and the last 100 commits. Run with
// -benchtime=1000x. The expire-every-100 variant also runs
// ExpireSnapshots(keepLast 100) every 100 commits (not timed), as the
// appliance's scheduled maintenance does.
func BenchmarkCommitLatency(b *testing.B) {
	events := sampleEvents(b)
	variants := []struct {
		name        string
		expireEvery int
		props       map[string]string
	}{
		{"no-expiry", 0, nil},
		{"expire-every-100", 100, nil},
		{"no-expiry/merge-min-count-100", 0, map[string]string{"commit.manifest.min-count-to-merge": "100"}},
		{"expire-every-100/merge-min-count-100", 100, map[string]string{"commit.manifest.min-count-to-merge": "100"}},
	}
	for _, v := range variants {
		expireEvery := v.expireEvery
		b.Run(v.name, func(b *testing.B) {
			l := openLake(b, table.Config{Dir: b.TempDir(), Props: v.props})
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			cpu := make([]time.Duration, 0, b.N) // process CPU per commit: less sensitive to a loaded machine
			var expireTotal time.Duration
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				rec, _ := realBronze(events, int64(i)*10, 10)
				if expireEvery > 0 && i > 0 && i%expireEvery == 0 {
					t0 := time.Now()
					if _, err := l.ExpireSnapshots(ctx, table.Bronze, expireEvery, 0, 0); err != nil {
						b.Fatal(err)
					}
					expireTotal += time.Since(t0)
				}
				b.StartTimer()
				c0 := cpuTime()
				t0 := time.Now()
				if _, err := l.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bench", ID: int64(i + 1),
					Offsets: fmt.Sprintf(`{"0":%d}`, i*10), Records: []arrow.RecordBatch{rec}}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				cpu = append(cpu, cpuTime()-c0)
				rec.Release()
			}
			b.StopTimer()
			w := min(100, len(lat))
			b.ReportMetric(pct(lat[:w], 0.5), "p50-first100-ms")
			b.ReportMetric(pct(lat[:w], 0.99), "p99-first100-ms")
			b.ReportMetric(pct(lat[len(lat)-w:], 0.5), "p50-last100-ms")
			b.ReportMetric(pct(lat[len(lat)-w:], 0.99), "p99-last100-ms")
			b.ReportMetric(pct(cpu[:w], 0.5), "cpu-p50-first100-ms")
			b.ReportMetric(pct(cpu[len(cpu)-w:], 0.5), "cpu-p50-last100-ms")
			if expireEvery > 0 && b.N > expireEvery {
				b.ReportMetric(float64(expireTotal.Milliseconds())/float64(b.N/expireEvery), "ms/expiry")
			}
		})
	}
}

// BenchmarkWriteParquet measures Arrow-to-Parquet throughput through
// CommitBatch: batches of 20,000 bronze rows of real events (about 1.2 KB
// each) to local disk with zstd, reported as rows/s and input MB/s (Arrow
// column bytes). Run with -benchtime=10x.
func BenchmarkWriteParquet(b *testing.B) {
	events := sampleEvents(b)
	l := openLake(b, table.Config{Dir: b.TempDir()})
	ctx := context.Background()
	const rows = 20000
	var inBytes int64
	var elapsed time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		rec, n := realBronze(events, int64(i)*rows, rows)
		inBytes += n
		b.StartTimer()
		t0 := time.Now()
		if _, err := l.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bench", ID: int64(i + 1),
			Records: []arrow.RecordBatch{rec}}); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(t0)
		rec.Release()
	}
	b.StopTimer()
	b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(inBytes)/1e6/elapsed.Seconds(), "MB/s")
}

// BenchmarkCompactTier: merging eight bronze files of 12,000 rows of 1 KB
// values (a higher tier, like the bronze merges of an hour at the real rate) into
// one; setting up the files is not timed.
func BenchmarkCompactTier(b *testing.B) {
	ctx := context.Background()
	const files, rows, size = 8, 12_000, 1_000
	recs := make([]arrow.RecordBatch, files)
	for i := range recs {
		recs[i] = paddedBronzeRecord(int64(i)*rows, rows, size)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for b.Loop() {
		b.StopTimer()
		l := openLake(b, table.Config{Dir: b.TempDir()})
		for i, rec := range recs {
			mustCommit(b, l, table.Bronze, batchOf("bronze", int64(i+1), rec))
		}
		b.StartTimer()
		res, err := l.Compact(ctx, table.Bronze, table.CompactPolicy{TargetBytes: 256 << 20, FanIn: files})
		if err != nil {
			b.Fatal(err)
		}
		if res.RowsMoved != files*rows {
			b.Fatalf("moved %d rows, want %d", res.RowsMoved, files*rows)
		}
	}
	b.ReportMetric(float64(files*rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
