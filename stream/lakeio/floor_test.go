package lakeio

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/table"
)

// TestResumeSnapshot: the snapshot a reading query resumes after is the end
// of its last committed batch, read from its sink's marker; before it has
// committed a batch that read something, it is ErrNotConsumed.
func TestResumeSnapshot(t *testing.T) {
	ctx := context.Background()
	lake := openLake(t)
	if _, err := ResumeSnapshot(ctx, lake, table.SilverEdits, "silver"); !errors.Is(err, ErrNotConsumed) {
		t.Fatalf("before any batch: got %v, want ErrNotConsumed", err)
	}
	// A batch that read nothing yet (its end is snapshot 0).
	if _, err := lake.CommitBatch(ctx, table.SilverEdits, table.Batch{Query: "silver", ID: 0, Offsets: string(SnapshotOffset{}.Offset())}); err != nil {
		t.Fatal(err)
	}
	if _, err := ResumeSnapshot(ctx, lake, table.SilverEdits, "silver"); !errors.Is(err, ErrNotConsumed) {
		t.Fatalf("after a batch that read nothing: got %v, want ErrNotConsumed", err)
	}
	res, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", ID: 0, Offsets: `{"0":3}`, Records: []arrow.RecordBatch{bronzeRows(0, 3)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.CommitBatch(ctx, table.SilverEdits, table.Batch{Query: "silver", ID: 1, Offsets: string(SnapshotOffset{Snapshot: res.SnapshotID}.Offset())}); err != nil {
		t.Fatal(err)
	}
	got, err := ResumeSnapshot(ctx, lake, table.SilverEdits, "silver")
	if err != nil || got != res.SnapshotID {
		t.Fatalf("after a batch that read bronze's snapshot %d: got %d, %v", res.SnapshotID, got, err)
	}
}

// TestProtect: a table a reader reads is protected from the snapshot the
// reader resumes after (an error wrapping ErrNotConsumed before it read
// anything); a table no reader reads needs nothing kept.
func TestProtect(t *testing.T) {
	ctx := context.Background()
	lake := openLake(t)
	readers := []Reader{{Source: table.Bronze, Sink: table.SilverEdits, Query: "silver"}}
	if _, err := Protect(ctx, lake, readers, table.Bronze); !errors.Is(err, ErrNotConsumed) {
		t.Fatalf("before the reader read anything: got %v, want ErrNotConsumed", err)
	}
	res, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", ID: 0, Offsets: `{"0":3}`, Records: []arrow.RecordBatch{bronzeRows(0, 3)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.CommitBatch(ctx, table.SilverEdits, table.Batch{Query: "silver", ID: 0, Offsets: string(SnapshotOffset{Snapshot: res.SnapshotID}.Offset())}); err != nil {
		t.Fatal(err)
	}
	if got, err := Protect(ctx, lake, readers, table.Bronze); err != nil || got != res.SnapshotID {
		t.Fatalf("after the reader read snapshot %d: got %d, %v", res.SnapshotID, got, err)
	}
	if got, err := Protect(ctx, lake, readers, table.SilverEdits); err != nil || got != 0 {
		t.Fatalf("a table nobody reads: got %d, %v; want 0, nil", got, err)
	}
}
