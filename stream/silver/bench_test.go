package silver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/internal/procmem"
	"lakehouse/stream"
	"lakehouse/table"
)

// envBenchEvents overrides the backlog size of BenchmarkSilverBacklog.
const envBenchEvents = "LAKEHOUSE_SILVER_BENCH_EVENTS"

// eventFactory stamps copies of the 50 real sample events (same size and
// shape as the live stream) with a fresh meta.id and edit time.
type eventFactory struct {
	templates [][]byte
}

const (
	idHole = "@@@@@@@@-@@@@-@@@@-@@@@-@@@@@@@@@@@@"
	tsHole = "7777777777"
)

func newEventFactory(t testing.TB) *eventFactory {
	f := &eventFactory{}
	for _, raw := range sampleEvents(t) {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		m["meta"].(map[string]any)["id"] = idHole
		m["timestamp"] = json.Number(tsHole)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		f.templates = append(f.templates, b)
	}
	return f
}

// event returns event i stamped at unix second ts.
func (f *eventFactory) event(i int, ts int64) []byte {
	b := f.templates[i%len(f.templates)]
	b = bytes.Replace(b, []byte(idHole), []byte(uuidFor(i)), 1)
	return bytes.Replace(b, []byte(tsHole), []byte(strconv.FormatInt(ts, 10)), 1)
}

// bronzeBatch builds one bronze record of events from..from+n-1, rate
// events per second of edit time from start; every 100th event is a resend
// of the one 50 before it.
func (f *eventFactory) bronzeBatch(from, n, rate int, start time.Time) arrow.RecordBatch {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer rb.Release()
	for i := from; i < from+n; i++ {
		id := i
		if i%100 == 99 {
			id = i - 50
		}
		ts := start.Unix() + int64(id/rate)
		rb.Field(0).(*array.Int32Builder).Append(0)
		rb.Field(1).(*array.Int64Builder).Append(int64(i))
		rb.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(ts * 1e6))
		rb.Field(3).(*array.StringBuilder).AppendNull()
		rb.Field(4).(*array.StringBuilder).Append(string(f.event(id, ts)))
		rb.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(ts * 1e6))
	}
	return rb.NewRecordBatch()
}

// BenchmarkSilverBacklog runs the silver query (table source, processor,
// table sink, progress) over a bronze backlog of 1,000,000 events shaped
// like the live stream (40% edit/new, 1% resends), 100,000 per batch.
func BenchmarkSilverBacklog(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv(envBenchEvents)); err == nil && v > 0 {
		n = v
	}
	const perSnapshot = 50_000
	ctx := context.Background()
	dir := b.TempDir()
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer lake.Close()
	if err := lake.EnsureTables(ctx); err != nil {
		b.Fatal(err)
	}
	f := newEventFactory(b)
	var bytesIn int64
	for k := 0; k*perSnapshot < n; k++ {
		rec := f.bronzeBatch(k*perSnapshot, min(perSnapshot, n-k*perSnapshot), 35, base)
		bytesIn += int64(rec.Column(4).(*array.String).ValueLen(0)) * rec.NumRows()
		_, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", ID: int64(k), Offsets: "x",
			Records: []arrow.RecordBatch{rec}})
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var rows int64
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("silver-bench-%d", i)
		cfg := stream.Config{Name: name, CheckpointDir: filepath.Join(dir, "cp", name), MaxOffsetsPerTrigger: 100_000,
			Trigger: -1, Logger: slog.New(slog.DiscardHandler)}
		q, _, err := NewQuery(lake, cfg, Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		if err := q.Drain(ctx); err != nil {
			b.Fatal(err)
		}
		last, runs := q.Last()
		_ = last
		rows += runs
	}
	b.StopTimer()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(bytesIn)/float64(n), "B/event")
}

// BenchmarkProcess measures the processor alone (parse, watermark, dedup,
// Arrow rows) on batches of 10,000 sample-shaped events.
func BenchmarkProcess(b *testing.B) {
	h := newHarness(b, Config{})
	f := newEventFactory(b)
	const per = 10_000
	recs := make([]arrow.RecordBatch, 0, 16)
	for i := 0; i < 16; i++ {
		recs = append(recs, f.bronzeBatch(i*per, per, 35, base))
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bt := stream.Batch{Query: QueryName, ID: int64(i)}
		meta, err := h.p.PlanMeta(ctx, bt)
		if err != nil {
			b.Fatal(err)
		}
		bt.Meta = meta
		rec := recs[i%len(recs)]
		rec.Retain()
		out, err := h.p.Process(ctx, bt, []arrow.RecordBatch{rec})
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range out {
			o.Release()
		}
	}
	b.ReportMetric(float64(per)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkDedupStateMemory holds the dedup state of a stream of 10,000
// new ids per second of edit time with the default 10-minute delay, for 25
// minutes of edit time, one batch per second: the real state code (add,
// lookup, eviction sweep, SaveState with deltas and a full snapshot every
// DefaultMaxDeltaChain batches) without the JSON parsing. Ids stay until
// event_time + delay falls below the watermark (newest - delay), so the
// steady state holds 2 x delay x rate = 12 million ids; the metrics at6M-*
// are taken when 6 million ids were live. It reports heap bytes per live id,
// full-snapshot bytes per id and the process's peak RSS.
func BenchmarkDedupStateMemory(b *testing.B) {
	const (
		rate    = 10_000
		seconds = 25 * 60
	)
	delay := DefaultWatermarkDelay
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var m0 runtime.MemStats
		runtime.ReadMemStats(&m0)
		p := NewProcessor(Config{Logger: slog.New(slog.DiscardHandler)})
		s := newState(-1)
		var buf []byte
		var fullBytes, maxLive int
		var at6M float64
		n := 0
		for sec := 0; sec < seconds; sec++ {
			wm := s.watermark
			if s.maxEvent != noTime {
				wm = max(wm, s.maxEvent-delay.Microseconds())
			}
			s.added = s.added[:0]
			et := base.Add(time.Duration(sec) * time.Second).UnixMicro()
			for j := 0; j < rate; j++ {
				k := keyOf(uuidFor(n))
				n++
				if s.live(k, wm, delay) {
					b.Fatal("fresh id found live")
				}
				s.add(k, et)
			}
			s.version, s.maxEvent, s.watermark = int64(sec), et, wm
			s.evict(wm, delay)
			st, err := p.f.Encode(s, buf)
			if err != nil {
				b.Fatal(err)
			}
			buf = stream.KeepStateBuffer(st)
			if st[4] == kindFull {
				fullBytes = len(st)
			}
			if live := len(s.ids); live > maxLive {
				maxLive = live
				if at6M == 0 && live >= 6_000_000 {
					runtime.GC()
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					at6M = float64(m.HeapAlloc-m0.HeapAlloc) / float64(live)
					b.ReportMetric(float64(procmem.Self("VmHWM"))/(1<<20), "at6M-peak-RSS-MiB")
				}
			}
		}
		runtime.GC()
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		live := len(s.ids)
		b.ReportMetric(at6M, "at6M-heap-B/id")
		b.ReportMetric(float64(live), "live-ids")
		b.ReportMetric(float64(maxLive), "max-live-ids")
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/float64(live), "heap-B/id")
		b.ReportMetric(float64(fullBytes)/float64(live), "snapshot-B/id")
		b.ReportMetric(float64(procmem.Self("VmHWM"))/(1<<20), "peak-RSS-MiB")
		runtime.KeepAlive(p)
	}
}
