package main

import (
	"context"
	"io"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/marts"
	"lakehouse/stream"
	"lakehouse/stream/silver"
	"lakehouse/table"
)

// TestFootprintFlatOverThousandsOfBatches drives a few thousand small
// batches through the real engine (bronze, silver, sessions and the marts'
// maintenance loop, wired as `run` wires them) and checks, by counts, that
// nothing grows with the number of commits: every table's snapshots stay
// under the bound, its live data files stay bounded, and the live heap
// after a GC late in the run is not materially above the level early in
// the run. Before snapshot expiry by count each table carried one snapshot
// per batch (thousands here) and the heap grew with them. The live data
// files are bounded where the tiers bound them, right after a compaction
// pass that saw every commit: between two passes a table adds a file per
// commit, as many as the machine runs meanwhile, which is no bound at all.
func TestFootprintFlatOverThousandsOfBatches(t *testing.T) {
	appends, perAppend := 2000, 30
	if testing.Short() {
		appends = 600
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	f := appliance.Config{Store: appliance.Store{Data: dir}, Partitions: ingest.DefaultPartitions,
		Trigger: 5 * time.Millisecond, MaxOffsetsPerTrigger: stream.DefaultMaxOffsetsPerTrigger, CheckpointLoss: "rebuild",
		// Event times advance 1 s per 35 events: a short watermark and
		// session gap reach their steady state within the run.
		Watermark: time.Minute, SessionGap: 2 * time.Minute,
		Refresh: -1, NoIngest: true, MaintainEvery: 100 * time.Millisecond, CompactEvery: 500 * time.Millisecond,
		MaxSnapshots: marts.DefaultMaxSnapshots, KeepSnapshots: marts.DefaultKeepSnapshots}
	var released atomic.Int64
	f.FreeOSMemory = func() { released.Add(1); debug.FreeOSMemory() }
	p, err := appliance.Open(ctx, f, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx, io.Discard) }()

	rec := replay.Generate(20261201, appends*perAppend)
	tables := []string{table.Bronze, table.SilverEdits, table.EditorSessions, table.StreamProgress, marts.OpsRuns}
	// The snapshot bound holds "at all times" up to what commits between
	// two maintenance passes (a pass every 100 ms, a few commits per table
	// meanwhile); the data files, after a compaction pass with nothing new
	// to read, at fewer than FanIn per tier per partition.
	snapLimit := marts.DefaultMaxSnapshots + 15
	const fileLimit = 80
	maxSnaps, maxFiles, settledFiles := map[string]int{}, map[string]int64{}, map[string]int64{}
	settles := 0
	var early, late uint64
	for i := range appends {
		recs := make([]broker.Record, perAppend)
		for j := range recs {
			recs[j] = broker.Record{Topic: ingest.DefaultTopic, Partition: (i*perAppend + j) % ingest.DefaultPartitions,
				Value: rec.Events[i*perAppend+j], Timestamp: time.Now()}
		}
		if _, err := p.Broker().Append(ctx, broker.Batch{Records: recs}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(8 * time.Millisecond) // about one bronze batch per append
		if i%50 == 49 {
			for _, id := range tables {
				st, err := p.Lake().Stats(ctx, id)
				if err != nil {
					continue // ops tables appear with the first recorded run
				}
				maxSnaps[id] = max(maxSnaps[id], st.Snapshots)
				maxFiles[id] = max(maxFiles[id], st.DataFiles)
			}
		}
		if i%(appends/8) == appends/8-1 {
			// Let the streams read everything, then run one compaction
			// pass (as the loop does, under its lock) and count the files.
			waitSilverCaughtUp(t, ctx, p)
			if _, err := mustMarts(t, p).RunJob(ctx, marts.JobCompact); err != nil {
				t.Fatalf("compaction after %d appends: %v", i+1, err)
			}
			settles++
			for _, id := range tables {
				if st, err := p.Lake().Stats(ctx, id); err == nil {
					settledFiles[id] = max(settledFiles[id], st.DataFiles)
				}
			}
		}
		if i == appends/4 {
			early = settledLiveHeap()
		}
		select {
		case err := <-errc:
			t.Fatalf("appliance stopped: %v", err)
		default:
		}
	}
	waitSilverCaughtUp(t, ctx, p)
	late = settledLiveHeap()
	runtime.KeepAlive(rec)

	bronzeBatches := batchesRun(p, stream.BronzeQuery)
	silverBatches := batchesRun(p, silver.QueryName)
	t.Logf("%d appends: bronze ran %d batches, silver %d; live heap after GC %.1f MiB at a quarter, %.1f MiB at the end",
		appends, bronzeBatches, silverBatches, float64(early)/(1<<20), float64(late)/(1<<20))
	if bronzeBatches < int64(appends)/4 {
		t.Errorf("inconclusive: bronze ran %d batches for %d appends, want thousands of small ones", bronzeBatches, appends)
	}
	for _, id := range tables {
		t.Logf("%s: at most %d snapshots, %d live data files (%d right after a compaction pass)", id, maxSnaps[id], maxFiles[id], settledFiles[id])
		if maxSnaps[id] > snapLimit {
			t.Errorf("%s held %d snapshots, want at most %d", id, maxSnaps[id], snapLimit)
		}
		if settledFiles[id] > fileLimit {
			t.Errorf("%s held %d live data files after a compaction pass, want at most %d", id, settledFiles[id], fileLimit)
		}
	}
	if settles < 8 || settledFiles[table.Bronze] == 0 {
		t.Errorf("inconclusive: %d compaction passes counted, bronze's files %d", settles, settledFiles[table.Bronze])
	}
	if maxSnaps[table.Bronze] == 0 || maxSnaps[table.SilverEdits] == 0 {
		t.Errorf("inconclusive: bronze or silver never sampled (%v)", maxSnaps)
	}
	// The heap a compaction used is handed back after it (releaser.afterJob).
	if released.Load() == 0 {
		t.Errorf("no compaction handed its heap back to the operating system (last compaction run: %q)", mustMarts(t, p).LastRun(marts.JobCompact).ID)
	}
	if late > early+16<<20 {
		t.Errorf("live heap grew from %.1f MiB to %.1f MiB over the run, want at most 16 MiB more",
			float64(early)/(1<<20), float64(late)/(1<<20))
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("appliance: %v", err)
	}
}

// settledLiveHeap returns the heap still in use after a full collection: the
// least of five readings over two seconds, so that what a batch or a
// compaction in flight holds at that moment does not count as growth.
func settledLiveHeap() uint64 {
	least := uint64(math.MaxUint64)
	for i := range 5 {
		if i > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		least = min(least, ms.HeapAlloc)
	}
	return least
}

func batchesRun(p *appliance.Appliance, query string) int64 {
	q := p.Query(query)
	if q == nil {
		return 0
	}
	_, n := q.Last()
	return n
}

// waitSilverCaughtUp waits until bronze and silver have nothing left to read.
func waitSilverCaughtUp(t *testing.T, ctx context.Context, p *appliance.Appliance) {
	t.Helper()
	want := int64(0)
	if offs, err := p.Broker().Offsets(ctx, ingest.DefaultTopic); err == nil {
		for _, o := range offs {
			want += o.End
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if p.Status(ctx, stream.BronzeQuery, silver.QueryName).Drained(ingest.DefaultTopic, want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("bronze and silver did not catch up: %v", p.Status(ctx).Lags())
}
