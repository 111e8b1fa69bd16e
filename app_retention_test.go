package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/stream"
	"lakehouse/table"
)

// TestRetentionNeverPassesBronze: broker retention trims old records only
// below what bronze has committed, and nothing before bronze's first commit.
func TestRetentionNeverPassesBronze(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateTopic(ctx, ingest.DefaultTopic, 2); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var recs []broker.Record
	for i := 0; i < 10; i++ {
		for p := 0; p < 2; p++ {
			recs = append(recs, broker.Record{Topic: ingest.DefaultTopic, Partition: p, Value: []byte("{}"), Timestamp: now.Add(-2 * time.Hour)})
		}
	}
	if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
		t.Fatal(err)
	}
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	if err := lake.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	// Before bronze committed anything: nothing may go.
	if n, err := retainConsumed(ctx, db, lake, time.Hour, now); err != nil || n != 0 {
		t.Fatalf("retention before any bronze commit: removed %d, %v; want 0", n, err)
	}
	// Bronze has committed offsets 0..3 of partition 0 and nothing of 1.
	end := stream.PartitionOffsets{0: 4}
	if _, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: stream.BronzeQuery, ID: 0, Offsets: string(end.Offset())}); err != nil {
		t.Fatal(err)
	}
	n, err := retainConsumed(ctx, db, lake, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	offs, _ := db.Offsets(ctx, ingest.DefaultTopic)
	if n != 4 || offs[0].Start != 4 || offs[1].Start != 0 {
		t.Fatalf("retention: removed %d, starts %d/%d; want 4 removed, starts 4/0", n, offs[0].Start, offs[1].Start)
	}
	// Records younger than the limit stay even below the floor.
	if n, _ := retainConsumed(ctx, db, lake, 3*time.Hour, now); n != 0 {
		t.Fatalf("retention with a longer age: removed %d, want 0", n)
	}
}
