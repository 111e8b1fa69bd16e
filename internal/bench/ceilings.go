package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/stream"
	"lakehouse/stream/silver"
	"lakehouse/table"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// ceiling is one stage measured alone: the events it handled, the wall
// time, and the process's CPU time (rusage) over the same interval.
type ceiling struct {
	events  int64
	seconds float64
	cpu     float64
	bytes   int64 // the events' size (bronze drain)
}

// rate is events per second.
func (c ceiling) rate() float64 { return float64(c.events) / c.seconds }

// cpuPerEvent is the process's CPU-µs per event.
func (c ceiling) cpuPerEvent() float64 { return c.cpu * 1e6 / float64(c.events) }

// mbps is the events' MB per second.
func (c ceiling) mbps() float64 { return float64(c.bytes) / c.seconds / 1e6 }

// measure runs fn on a collected heap (the garbage of what came before is
// not billed to it) and returns its wall and CPU seconds.
func measure(fn func() error) (wall, cpu float64, err error) {
	runtime.GC()
	start, cpu0 := time.Now(), cpuTime()
	err = fn()
	return time.Since(start).Seconds(), cpuTime() - cpu0, err
}

// producerCeiling measures how many events/s ingest sustains from a
// flat-out loopback replay into the durable broker, validation on. Its CPU
// includes the replay server's, which runs in the same process.
func producerCeiling(ctx context.Context, base string, n int) (ceiling, error) {
	dir, err := os.MkdirTemp(base, "producer-")
	if err != nil {
		return ceiling{}, err
	}
	defer os.RemoveAll(dir)
	rec := recording()
	src := replay.New(replay.Config{Seed: 42, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	src.Loops(rec, (n+rec.Len()-1)/rec.Len())
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		return ceiling{}, err
	}
	defer src.Close()
	want := src.Counts().OnTime
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		return ceiling{}, err
	}
	defer db.Close()
	ing, err := ingest.New(db, ingest.Config{URL: url, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return ceiling{}, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	runtime.GC()
	start, cpu0 := time.Now(), cpuTime()
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
				c := ceiling{events: got, seconds: time.Since(start).Seconds(), cpu: cpuTime() - cpu0}
				stop()
				<-errc
				return c, nil
			}
		}
		select {
		case err := <-errc:
			return ceiling{}, fmt.Errorf("ingest stopped: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// drainCeilings measures bronze landing a backlog of n recorded events
// already in the broker, then silver reading that bronze backlog, each
// until it has nothing left. Every pass over the recording gets fresh
// meta.ids (replay.LoopID, as the replay server's loops do) and keeps the
// recorded event times, which span under a minute: silver keeps every
// edit and new event (none is a duplicate, none is behind the 10-minute
// watermark), and the drain fails if it does not.
func drainCeilings(ctx context.Context, base string, n int) (bronze, silverC ceiling, err error) {
	dir, err := os.MkdirTemp(base, "drain-")
	if err != nil {
		return ceiling{}, ceiling{}, err
	}
	defer os.RemoveAll(dir)
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		return ceiling{}, ceiling{}, err
	}
	defer db.Close()
	size, editNew, err := appendBacklog(ctx, db, n)
	if err != nil {
		return ceiling{}, ceiling{}, err
	}
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		return ceiling{}, ceiling{}, err
	}
	defer lake.Close()
	if err := lake.EnsureTables(ctx); err != nil {
		return ceiling{}, ceiling{}, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	bq, err := stream.NewBronze(db, lake, stream.Config{DataDir: dir, Logger: quiet})
	if err != nil {
		return ceiling{}, ceiling{}, err
	}
	bronze = ceiling{events: int64(n), bytes: size}
	if bronze.seconds, bronze.cpu, err = measure(func() error { return bq.Drain(ctx) }); err != nil {
		return ceiling{}, ceiling{}, fmt.Errorf("drain bronze: %w", err)
	}

	// Silver as the appliance runs it (internal/appliance's streams.go), on the lake
	// bronze just filled.
	sq, _, err := silver.NewQuery(lake, stream.Config{Name: silver.QueryName, DataDir: dir, Trigger: -1, Logger: quiet},
		silver.Config{WatermarkDelay: 10 * time.Minute, Logger: quiet})
	if err != nil {
		return ceiling{}, ceiling{}, err
	}
	in, err := lake.Stats(ctx, table.Bronze)
	if err != nil {
		return ceiling{}, ceiling{}, err
	}
	silverC = ceiling{events: in.Records}
	if silverC.seconds, silverC.cpu, err = measure(func() error { return sq.Drain(ctx) }); err != nil {
		return ceiling{}, ceiling{}, fmt.Errorf("drain silver: %w", err)
	}
	out, err := lake.Stats(ctx, table.SilverEdits)
	if err != nil {
		return ceiling{}, ceiling{}, err
	}
	if in.Records != int64(n) || out.Records != editNew {
		return ceiling{}, ceiling{}, fmt.Errorf("drain silver: bronze holds %d of %d events, silver %d of %d edit/new events", in.Records, n, out.Records, editNew)
	}
	return bronze, silverC, nil
}

// appendBacklog appends n events of the recording to the broker's stream
// topic, round-robin over its partitions, with fresh meta.ids every pass;
// it returns their bytes and how many are edit or new events.
func appendBacklog(ctx context.Context, db *broker.DB, n int) (size, editNew int64, err error) {
	if err := db.CreateTopic(ctx, ingest.DefaultTopic, ingest.DefaultPartitions); err != nil {
		return 0, 0, err
	}
	rec := recording()
	ids := make([][]byte, rec.Len())
	kept := make([]bool, rec.Len())
	for i, ev := range rec.Events {
		var head struct {
			Type string `json:"type"`
			Meta struct {
				ID string `json:"id"`
			} `json:"meta"`
		}
		if err := json.Unmarshal(ev, &head); err != nil {
			return 0, 0, fmt.Errorf("read recording: %w", err)
		}
		ids[i], kept[i] = []byte(head.Meta.ID), head.Type == "edit" || head.Type == "new"
	}
	now := time.Now()
	for off := 0; off < n; {
		batch := make([]broker.Record, 0, 5000)
		for ; off < n && len(batch) < 5000; off++ {
			i, loop := off%rec.Len(), off/rec.Len()
			v := rec.Events[i]
			if loop > 0 {
				v = bytes.Replace(v, ids[i], []byte(replay.LoopID(42, loop, string(ids[i]))), 1)
			}
			size += int64(len(v))
			if kept[i] {
				editNew++
			}
			batch = append(batch, broker.Record{Topic: ingest.DefaultTopic, Partition: off % ingest.DefaultPartitions, Value: v, Timestamp: now})
		}
		if _, err := db.Append(ctx, broker.Batch{Records: batch}); err != nil {
			return 0, 0, fmt.Errorf("append backlog: %w", err)
		}
	}
	return size, editNew, nil
}
