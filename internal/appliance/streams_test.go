package appliance

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/marts"
	"lakehouse/stream/lakeio"
	"lakehouse/stream/silver/silvertest"
	"lakehouse/table"
)

// TestProtectNamesEachReader: the protection the appliance hands the marts
// keeps bronze from the snapshot silver resumes after and silver.edits
// from the one sessions resume after (marts.ErrNotConsumed until they have
// read something), and nothing of a table no query reads.
func TestProtectNamesEachReader(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lake := silvertest.OpenLake(t, dir)
	defer lake.Close()
	p := &Appliance{lake: lake, log: slog.New(slog.DiscardHandler)}
	for _, ident := range []string{table.Bronze, table.SilverEdits} {
		if _, err := p.protect(ctx, ident); !errors.Is(err, marts.ErrNotConsumed) {
			t.Fatalf("%s before its reader read anything: got %v, want marts.ErrNotConsumed", ident, err)
		}
	}
	// Bronze commits a batch, silver a batch that read it, sessions one
	// whose marker says it read silver's snapshot silverSnap.
	row := silvertest.BronzeEdits(1)
	defer row.Release()
	b, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", ID: 0, Offsets: `{"0":1}`, Records: []arrow.RecordBatch{row}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.CommitBatch(ctx, table.SilverEdits, table.Batch{Query: "silver", ID: 0,
		Offsets: string(lakeio.SnapshotOffset{Snapshot: b.SnapshotID}.Offset())}); err != nil {
		t.Fatal(err)
	}
	const silverSnap = 4242 // the silver snapshot sessions' marker says they read
	if _, err := lake.CommitBatch(ctx, table.EditorSessions, table.Batch{Query: "sessions", ID: 0,
		Offsets: string(lakeio.SnapshotOffset{Snapshot: silverSnap}.Offset())}); err != nil {
		t.Fatal(err)
	}
	for ident, want := range map[string]int64{table.Bronze: b.SnapshotID, table.SilverEdits: silverSnap, table.EditorSessions: 0} {
		if got, err := p.protect(ctx, ident); err != nil || got != want {
			t.Errorf("protect %s: got %d, %v; want %d", ident, got, err, want)
		}
	}
}
