package bench

import (
	"context"
	"fmt"
	"io"
	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/stream"
	"lakehouse/table"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// producerCeiling measures how many events/s ingest sustains from a
// flat-out loopback replay into the durable broker, validation on.
func producerCeiling(ctx context.Context, base string, n int) (float64, error) {
	dir, err := os.MkdirTemp(base, "producer-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	rec := recording()
	src := replay.New(replay.Config{Seed: 42, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	src.Loops(rec, (n+rec.Len()-1)/rec.Len())
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer src.Close()
	want := src.Counts().OnTime
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	ing, err := ingest.New(db, ingest.Config{URL: url, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return 0, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- ing.Run(runCtx) }()
	for {
		offs, err := db.Offsets(ctx, ingest.DefaultTopic)
		if err == nil {
			var got int64
			for _, o := range offs {
				got += o.End
			}
			if got >= want {
				el := time.Since(start)
				stop()
				<-errc
				return float64(got) / el.Seconds(), nil
			}
		}
		select {
		case err := <-errc:
			return 0, fmt.Errorf("ingest stopped: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// bronzeDrain measures how fast bronze lands a backlog of n recorded events
// already in the broker: records/s and MB/s.
func bronzeDrain(ctx context.Context, base string, n int) (rate, mbps float64, err error) {
	dir, err := os.MkdirTemp(base, "drain-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	if err := db.CreateTopic(ctx, ingest.DefaultTopic, ingest.DefaultPartitions); err != nil {
		return 0, 0, err
	}
	rec := recording()
	var bytes int64
	now := time.Now()
	for off := 0; off < n; {
		batch := make([]broker.Record, 0, 5000)
		for ; off < n && len(batch) < 5000; off++ {
			v := rec.Events[off%rec.Len()]
			bytes += int64(len(v))
			batch = append(batch, broker.Record{Topic: ingest.DefaultTopic, Partition: off % ingest.DefaultPartitions, Value: v, Timestamp: now})
		}
		if _, err := db.Append(ctx, broker.Batch{Records: batch}); err != nil {
			return 0, 0, err
		}
	}
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		return 0, 0, err
	}
	defer lake.Close()
	if err := lake.EnsureTables(ctx); err != nil {
		return 0, 0, err
	}
	q, err := stream.NewBronze(db, lake, stream.Config{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := q.Drain(ctx); err != nil {
		return 0, 0, err
	}
	el := time.Since(start).Seconds()
	return float64(n) / el, float64(bytes) / el / 1e6, nil
}
