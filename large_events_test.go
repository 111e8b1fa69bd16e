package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/bench"
	"lakehouse/marts"
	"lakehouse/stream"
	"lakehouse/stream/silver"
)

// TestLargeEventsLandInSilver: a backlog of 1,000 valid events of 200 KB
// (200 MB, under the 256 KiB event limit) goes through bronze and silver at
// the default batch caps and lands in silver completely: bronze takes it in
// batches cut by the byte cap (the offset cap, 20,000, would have taken it
// whole), every page it wrote is one the Parquet reader and DuckDB read
// (silver read them; a query over bronze's values here), and the process's
// peak RSS while draining (anonymous memory: the broker's mmap is page
// cache) stays under 1 GiB (issue 14 saw 5.2 GB).
func TestLargeEventsLandInSilver(t *testing.T) {
	const n, size = 1000, 200_000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	f := appliance.Config{Store: appliance.Store{Data: dir}, Partitions: ingest.DefaultPartitions,
		Trigger: stream.DefaultTrigger, MaxOffsetsPerTrigger: stream.DefaultMaxOffsetsPerTrigger, CheckpointLoss: "rebuild",
		Watermark: 10 * time.Minute, SessionGap: 30 * time.Minute, Refresh: -1, NoIngest: true,
		MaxSnapshots: marts.DefaultMaxSnapshots, KeepSnapshots: marts.DefaultKeepSnapshots}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := appliance.Open(ctx, f, quiet)
	if err != nil {
		t.Fatal(err)
	}
	rec := replay.Generate(20261202, n).Padded(size)
	editNew := 0
	for _, ev := range rec.Events {
		var e struct{ Type string }
		if err := json.Unmarshal(ev, &e); err != nil {
			t.Fatal(err)
		}
		if e.Type == "edit" || e.Type == "new" {
			editNew++
		}
	}
	// The backlog is in the broker before bronze starts.
	for i := 0; i < n; i += 50 {
		var b broker.Batch
		for _, ev := range rec.Events[i:min(n, i+50)] {
			b.Records = append(b.Records, broker.Record{Topic: ingest.DefaultTopic, Partition: broker.AnyPartition, Value: ev, Timestamp: time.Now()})
		}
		if _, err := p.Broker().Append(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	rec = replay.Recording{} // the fixture's 200 MB are not the appliance's
	// Anonymous memory: the broker's mmap of its file is page cache.
	bench.ResetPeakRSS()
	stopSampling, peakc := make(chan struct{}), make(chan float64, 1)
	go bench.SampleAnon(stopSampling, peakc)
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx, io.Discard) }()
	waitSilverCaughtUp(t, ctx, p)
	close(stopSampling)
	peak := <-peakc
	bronzeBatches := batchesRun(p, stream.BronzeQuery)
	st := p.Status(ctx, stream.BronzeQuery, silver.QueryName)
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("appliance: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events of %d bytes: bronze ran %d batches; %s; peak anonymous RSS %.0f MiB", n, size, bronzeBatches, st.Lags(), peak)
	if !(peak < 1024) { // NaN (no /proc) fails too
		t.Errorf("peak anonymous RSS draining %d events of %d bytes: %.0f MiB, want under 1 GiB", n, size, peak)
	}
	if min := int64(n * size / stream.DefaultMaxBytesPerTrigger); bronzeBatches <= min {
		t.Errorf("bronze ran %d batches for %d bytes, want more than %d (the byte cap)", bronzeBatches, n*size, min)
	}

	// Silver holds every edit and new event, and DuckDB reads bronze.
	var out, errb bytes.Buffer
	q := "SELECT (SELECT count(*) FROM silver.edits) AS silver, (SELECT count(*) FROM bronze.recentchange) AS bronze, " +
		"(SELECT min(strlen(value)) FROM bronze.recentchange) AS shortest"
	if code := run([]string{"query", "--data", dir, "--format", "csv", q}, &out, &errb); code != 0 {
		t.Fatalf("query: exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != "silver,bronze,shortest" {
		t.Fatalf("query: got %q", lines)
	}
	var got [3]int
	for i, v := range strings.Split(lines[1], ",") {
		if i < 3 {
			got[i], _ = strconv.Atoi(v)
		}
	}
	if got[0] != editNew || got[1] != n || got[2] < size {
		t.Errorf("silver %d rows, bronze %d rows, shortest bronze value %d bytes; want %d, %d, at least %d", got[0], got[1], got[2], editNew, n, size)
	}
}
