package silver

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/stream"
	"lakehouse/table"
)

// TestIntakeIsTheAppliancesDelay: silver reports two ages per batch, and
// they are not confused. Progress.Intake is each bronze row's age since the
// broker appended it (bronze's broker_ts, here now), Progress.Latency each
// silver row's age since its meta.dt (the recording's, months old). A
// replay of old events, as the demo sends, must not read as a slow
// appliance.
func TestIntakeIsTheAppliancesDelay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lake.Close() })
	if err := lake.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	values := sampleEvents(t)
	rec := bronzeRecord(t, 0, values...) // broker_ts: now
	_, err = lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", ID: 0, Offsets: "0", Records: []arrow.RecordBatch{rec}})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	var got []stream.Progress
	cfg := stream.Config{DataDir: dir, CheckpointDir: filepath.Join(dir, "cp"), Logger: slog.New(slog.DiscardHandler),
		OnBatch: func(p stream.Progress) { got = append(got, p) }}
	q, _, err := NewQuery(lake, cfg, Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].RowsOut == 0 {
		t.Fatalf("inconclusive: want one batch with silver rows, got %+v", got)
	}
	p := got[0]
	if p.Intake == nil || p.Intake.Count() != uint64(len(values)) {
		t.Fatalf("intake ages: got %v, want one per bronze row read (%d)", p.Intake, len(values))
	}
	if p.Latency == nil || p.Latency.Count() != uint64(p.RowsOut) {
		t.Fatalf("event-time ages: got %v, want one per silver row (%d)", p.Latency, p.RowsOut)
	}
	// Generous bound: the batch ran within minutes of the append; the
	// recording's meta.dt is months old (above the histogram's last bound).
	if q95 := p.Intake.Quantile(0.95); q95 > 600 {
		t.Errorf("intake p95 = %.1f s for rows appended just now: it measures something else", q95)
	}
	if q50 := p.Latency.Quantile(0.5); q50 < 3600 {
		t.Errorf("event-time p50 = %.1f s for events months old", q50)
	}
}
