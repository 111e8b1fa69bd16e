package stream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/internal/fault"
)

// TestSourceBehindSaysHowToRecover: a query started fresh after its
// checkpoint was lost (re-reading from the earliest offsets, behind its
// table's marker, which is all retention protects) plans its first batch,
// then retention trims the offsets it planned. The query stops with an
// error that names its checkpoint and the way out; taken (checkpoint
// moved away, rebuild from the table's marker), the query goes on.
// Inconclusive unless retention trimmed the planned range.
func TestSourceBehindSaysHowToRecover(t *testing.T) {
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 2)
	defer db.Close()
	fill(t, db, 400, 100)
	sink := newMemSink()
	cfg := Config{CheckpointDir: filepath.Join(dir, "cp"), MaxOffsetsPerTrigger: 50, OnCheckpointLoss: StartFresh}
	ctx := ctxT(t, 60*time.Second)
	if err := newTestQuery(t, cfg, db, sink, nil, nil).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(cfg.CheckpointDir); err != nil {
		t.Fatal(err)
	}
	// The table's marker: what retention keeps, as the appliance's does.
	var floor []int64
	offs, err := db.Offsets(ctx, testTopic)
	if err != nil {
		t.Fatal(err)
	}
	for _, po := range offs {
		floor = append(floor, po.End)
	}
	fill(t, db, 100, 100)
	var trimmed int64
	fault.ArmFunc("stream.after-offset-entry", 0, func(string) {
		n, err := db.Retain(context.Background(), testTopic, broker.Retention{MaxBytes: 1, Floor: floor})
		if err != nil {
			t.Errorf("retain: %v", err)
		}
		trimmed = n
	})
	err = newTestQuery(t, cfg, db, sink, nil, nil).Run(ctx)
	fault.Disarm()
	if trimmed == 0 {
		t.Fatal("inconclusive: retention trimmed nothing after the batch was planned")
	}
	if !errors.Is(err, ErrSourceBehind) || !strings.Contains(err.Error(), cfg.CheckpointDir) || !strings.Contains(err.Error(), "--checkpoint-loss rebuild") {
		t.Fatalf("Run after its planned range was trimmed: %v; want ErrSourceBehind naming the checkpoint and --checkpoint-loss rebuild", err)
	}
	t.Logf("refused: %v", err)

	if err := os.RemoveAll(cfg.CheckpointDir); err != nil {
		t.Fatal(err)
	}
	landed := len(sink.pairs("bronze"))
	cfg.OnCheckpointLoss = RebuildFromTable
	fill(t, db, 60, 60)
	if err := newTestQuery(t, cfg, db, sink, nil, nil).Drain(ctx); err != nil {
		t.Fatalf("the way out (checkpoint moved away, rebuild): %v", err)
	}
	if got := len(sink.pairs("bronze")) - landed; got != 160 {
		t.Fatalf("after the way out: %d records landed, want the 160 appended after the marker", got)
	}
}
