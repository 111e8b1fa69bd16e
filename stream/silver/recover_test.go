package silver

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"lakehouse/stream"
	"lakehouse/stream/silver/silvertest"
)

// When the checkpoint is lost, the query continues from the table's marker
// (stream.RebuildFromTable) and rebuilds its dedup state and watermark from
// silver.edits: resends of events committed before the loss are still
// dropped, late events still counted.
func TestCheckpointLossRebuildsStateFromTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sc := silvertest.Generate(3, 20, 25, DefaultWatermarkDelay)
	const split = 10
	snapOf := map[string]int{}
	crossing := 0 // resends after the loss of events committed before it
	for k, snap := range sc.Snapshots {
		for _, it := range snap {
			switch it.Kind {
			case silvertest.Fresh:
				snapOf[it.Event.ID] = k
			case silvertest.Resend:
				if k >= split && snapOf[it.Event.ID] < split {
					crossing++
				}
			}
		}
	}
	if crossing == 0 {
		t.Fatal("scenario has no resend across the checkpoint loss: the test would prove nothing")
	}

	lake := silvertest.OpenLake(t, dir)
	defer lake.Close()
	drain := func() {
		cfg := stream.Config{DataDir: dir, MaxOffsetsPerTrigger: 1, Trigger: -1, Logger: slog.New(slog.DiscardHandler)}
		q, _, err := NewQuery(lake, cfg, Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Drain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.CommitBronzeUpTo(ctx, lake, split); err != nil {
		t.Fatal(err)
	}
	drain()
	if err := os.RemoveAll(stream.CheckpointPath(dir, QueryName)); err != nil {
		t.Fatal(err)
	}
	if err := sc.CommitBronze(ctx, lake); err != nil {
		t.Fatal(err)
	}
	drain()
	t.Logf("%d resends crossed the checkpoint loss", crossing)
	VerifyScenario(t, lake, dir, sc)
}
