package stream

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/table"
)

// retainDLQTopic is the dead-letter topic of the retention tests (the
// appliance's name; testTopic is the other).
const retainDLQTopic = "recentchange.dlq"

// TestRetentionNeverPassesBronze: broker retention trims old records only
// below what bronze has committed, and nothing before bronze's first commit.
func TestRetentionNeverPassesBronze(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 2)
	defer db.Close()
	now := time.Now()
	var recs []broker.Record
	for i := 0; i < 10; i++ {
		for p := 0; p < 2; p++ {
			recs = append(recs, broker.Record{Topic: testTopic, Partition: p, Value: []byte("{}"), Timestamp: now.Add(-2 * time.Hour)})
		}
	}
	if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
		t.Fatal(err)
	}
	lake := openLake(t, dir)
	defer lake.Close()
	// Before bronze committed anything: nothing may go.
	if n, err := RetainBronze(ctx, db, lake, testTopic, time.Hour, 0, now); err != nil || n != 0 {
		t.Fatalf("retention before any bronze commit: removed %d, %v; want 0", n, err)
	}
	// Bronze has committed offsets 0..3 of partition 0 and nothing of 1.
	end := NextOffsets{0: 4}
	if _, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: BronzeQuery, ID: 0, Offsets: string(end.Offset())}); err != nil {
		t.Fatal(err)
	}
	n, err := RetainBronze(ctx, db, lake, testTopic, time.Hour, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	offs, _ := db.Offsets(ctx, testTopic)
	if n != 4 || offs[0].Start != 4 || offs[1].Start != 0 {
		t.Fatalf("retention: removed %d, starts %d/%d; want 4 removed, starts 4/0", n, offs[0].Start, offs[1].Start)
	}
	// Records younger than the limit stay even below the floor.
	if n, _ := RetainBronze(ctx, db, lake, testTopic, 3*time.Hour, 0, now); n != 0 {
		t.Fatalf("retention with a longer age: removed %d, want 0", n)
	}
}

// TestDLQRetention: dead letters older than --dlq-retention are trimmed,
// younger ones kept, but never one the dead-letter query has not committed
// to bronze.recentchange_dlq (nothing before its first commit); the
// recentchange topic is not touched by it.
func TestDLQRetention(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 1)
	defer db.Close()
	if err := db.CreateTopic(ctx, retainDLQTopic, 1); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var recs []broker.Record
	for i, age := range []time.Duration{40 * 24 * time.Hour, 31 * 24 * time.Hour, 24 * time.Hour, time.Minute} {
		for _, topic := range []string{testTopic, retainDLQTopic} {
			recs = append(recs, broker.Record{Topic: topic, Partition: 0, Value: []byte{byte(i)}, Timestamp: now.Add(-age)})
		}
	}
	if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
		t.Fatal(err)
	}
	lake := openLake(t, dir)
	defer lake.Close()
	if n, err := RetainDLQ(ctx, db, lake, retainDLQTopic, 30*24*time.Hour, now); err != nil || n != 0 {
		t.Fatalf("DLQ retention before the dead-letter query committed: removed %d, %v; want 0", n, err)
	}
	for id, end := range []int64{1, 4} {
		off := NextOffsets{0: end}
		if _, err := lake.CommitBatch(ctx, table.BronzeDLQ, table.Batch{Query: DLQQuery, ID: int64(id), Offsets: string(off.Offset())}); err != nil {
			t.Fatal(err)
		}
		n, err := RetainDLQ(ctx, db, lake, retainDLQTopic, 30*24*time.Hour, now)
		if err != nil || n != 1 {
			t.Fatalf("DLQ retention with offsets below %d committed: removed %d, %v; want 1 (the older ones, up to the floor)", end, n, err)
		}
	}
	dlq, _ := db.Offsets(ctx, retainDLQTopic)
	main, _ := db.Offsets(ctx, testTopic)
	if dlq[0].Start != 2 || dlq[0].End != 4 || main[0].Start != 0 {
		t.Errorf("after DLQ retention: dlq %+v (want start 2, end 4), recentchange %+v (want start 0)", dlq[0], main[0])
	}
}

// TestRetentionBytesNeverPassesBronze: with --retention-bytes, the oldest
// recentchange records go (whole compressed batches) while the topic
// stores more than the limit, however young, but never past what bronze
// has committed; once the floor allows, the topic ends at most a batch
// per partition above the limit.
func TestRetentionBytesNeverPassesBronze(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{Compress: true, CompressBatchBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateTopic(ctx, testTopic, 2); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := 0; i < 4000; i += 20 {
		var recs []broker.Record
		for j := i; j < i+20; j++ {
			v := fmt.Appendf(nil, `{"meta":{"id":"%08x-%d"},"title":"Page %d","user":"U%d","pad":"%0300d"}`, j*7919, j, j%313, j%97, j)
			recs = append(recs, broker.Record{Topic: testTopic, Partition: j % 2, Value: v, Timestamp: now})
		}
		if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	stored := func() (total int64, starts [2]int64) {
		offs, err := db.Offsets(ctx, testTopic)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range offs {
			total += o.Stored
			starts[o.Partition] = o.Start
		}
		return total, starts
	}
	full, _ := stored()
	limit := full / 4
	lake := openLake(t, dir)
	defer lake.Close()
	if n, err := RetainBronze(ctx, db, lake, testTopic, 0, limit, now); err != nil || n != 0 {
		t.Fatalf("size retention before any bronze commit: removed %d, %v; want 0", n, err)
	}
	// Bronze has landed 300 records of partition 0 and 1,500 of 1.
	floor := NextOffsets{0: 300, 1: 1500}
	if _, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: BronzeQuery, ID: 0, Offsets: string(floor.Offset())}); err != nil {
		t.Fatal(err)
	}
	if _, err := RetainBronze(ctx, db, lake, testTopic, 7*24*time.Hour, limit, now); err != nil {
		t.Fatal(err)
	}
	_, starts := stored()
	if starts[0] != 300 || starts[1] < 1000 || starts[1] > 1500 {
		t.Fatalf("size retention with floors 300/1500: starts %v; want 300 (the floor) and 1000..1500 (down to the limit, never past the floor)", starts)
	}
	// Everything landed: the topic ends within a batch per partition of the limit.
	floor = NextOffsets{0: 2000, 1: 2000}
	if _, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: BronzeQuery, ID: 1, Offsets: string(floor.Offset())}); err != nil {
		t.Fatal(err)
	}
	if _, err := RetainBronze(ctx, db, lake, testTopic, 7*24*time.Hour, limit, now); err != nil {
		t.Fatal(err)
	}
	left, starts := stored()
	if left > limit || left < limit/2 || starts[0] == 0 {
		t.Fatalf("size retention of %d stored bytes to %d: %d left (starts %v); want at most the limit and not far below", full, limit, left, starts)
	}
	t.Logf("%d bytes stored, limit %d: %d left, starts %v", full, limit, left, starts)
}
