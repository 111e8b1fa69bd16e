package ingest

import (
	"context"
	"fmt"
	"lakehouse/ingest/replay"
	"log/slog"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// BenchmarkIngest: loopback replay server (flat out) -> SSE client ->
// contract validation -> durable bbolt broker, everything in this process.
// Each iteration ingests 50,000 generated events (~1.3 KB) into a fresh
// broker; events/s is the figure to read.
func BenchmarkIngest(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			benchIngest(b, workers)
		})
	}
}

func benchIngest(b *testing.B, workers int) {
	const loops, loopLen = 5, 10_000
	const events = loops * loopLen
	rec := replay.Generate(1, loopLen)
	b.SetBytes(rec.Bytes() * loops) // per iteration
	var elapsed, cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r := replay.New(replay.Config{Seed: 1, Logger: slog.New(slog.DiscardHandler)})
		r.Loops(rec, loops)
		url, err := r.Start("127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		db := openBroker(b, filepath.Join(b.TempDir(), "broker.db"))
		in, err := New(db, Config{URL: url, Workers: workers, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		b.StartTimer()
		start, cpu0 := time.Now(), processCPU()
		go func() { done <- in.Run(ctx) }()
		for in.Stats().Appended < events {
			time.Sleep(time.Millisecond)
		}
		elapsed += time.Since(start)
		cpu += processCPU() - cpu0
		b.StopTimer()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		db.Close()
		r.Close()
	}
	b.ReportMetric(float64(events*b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(events*b.N), "cpu-µs/event")
}

// processCPU is the CPU time (user+system, all threads) used by this process:
// the replay server, the client, validation and the broker together. On a
// shared machine it is a steadier figure than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkContractCheck: decode + schema validation of one real event.
func BenchmarkContractCheck(b *testing.B) {
	rec := replay.Generate(2, 1000)
	c, err := NewContract()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(rec.Bytes() / int64(rec.Len()))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := c.Check(rec.Events[i%rec.Len()]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkReplayRead: the replay server and go-sse parsing alone (no
// validation, no broker), the ceiling of BenchmarkIngest.
func BenchmarkReplayRead(b *testing.B) {
	rec := replay.Generate(3, 10_000)
	r := replay.New(replay.Config{Seed: 3, Logger: slog.New(slog.DiscardHandler)})
	url, err := r.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	r.Loops(rec, (b.N+rec.Len()-1)/rec.Len())
	b.SetBytes(rec.Bytes() / int64(rec.Len()))
	b.ResetTimer()
	res, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	n := 0
	for _, err := range sse.Read(res.Body, nil) {
		if err != nil {
			b.Fatal(err)
		}
		if n++; n == b.N {
			break
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
