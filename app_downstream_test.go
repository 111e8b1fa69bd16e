package main

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/marts"
	"lakehouse/stream/lakeio"
	"lakehouse/table"
)

// TestProtectNamesEachReader: the protection the appliance hands the marts
// keeps bronze from the snapshot silver resumes after and silver.edits
// from the one sessions resume after (marts.ErrNotConsumed until they have
// read something), and nothing of a table no query reads.
func TestProtectNamesEachReader(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	if err := lake.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	p := &pipeline{lake: lake, log: slog.New(slog.DiscardHandler)}
	for _, ident := range []string{table.Bronze, table.SilverEdits} {
		if _, err := p.protect(ctx, ident); !errors.Is(err, marts.ErrNotConsumed) {
			t.Fatalf("%s before its reader read anything: got %v, want marts.ErrNotConsumed", ident, err)
		}
	}
	// Bronze commits a batch, silver a batch that read it, sessions one
	// whose marker says it read silver's snapshot silverSnap.
	rb := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer rb.Release()
	rb.Field(0).(*array.Int32Builder).Append(0)     // broker partition
	rb.Field(1).(*array.Int64Builder).Append(0)     // broker offset
	rb.Field(2).(*array.TimestampBuilder).Append(1) // broker timestamp
	rb.Field(3).AppendNull()
	rb.Field(4).(*array.StringBuilder).Append(`{"type":"edit"}`)
	rb.Field(5).(*array.TimestampBuilder).Append(1)
	row := rb.NewRecordBatch()
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
