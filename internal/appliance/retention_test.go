package appliance

import (
	"context"
	"log/slog"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/stream"
	"lakehouse/stream/silver/silvertest"
	"lakehouse/table"
)

// TestRetentionBytesAuto: --retention-bytes -1 resolves to a tenth of the
// data directory's file system; any other value is taken as it is.
func TestRetentionBytesAuto(t *testing.T) {
	dir := t.TempDir()
	f := Config{Store: Store{Data: dir}, RetentionBytes: RetentionBytesAuto}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if auto, want := f.brokerRetentionBytes(), int64(fs.Blocks)*int64(fs.Bsize)/10; auto != want || auto <= 0 {
		t.Fatalf("--retention-bytes -1 on %s resolved to %d, want a tenth of its file system, %d", dir, auto, want)
	}
	f.RetentionBytes = 12345
	if got := f.brokerRetentionBytes(); got != 12345 {
		t.Fatalf("--retention-bytes 12345 resolved to %d", got)
	}
}

// TestRunRetentionTrimsBothTopics: the appliance's retention loop applies
// --retention to the topic bronze lands and --dlq-retention to the
// dead-letter topic, each below what its query committed to its table:
// the wiring names the right topic, table and query for each.
func TestRunRetentionTrimsBothTopics(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lake := silvertest.OpenLake(t, dir)
	defer lake.Close()
	old := time.Now().Add(-48 * time.Hour)
	for _, topic := range []string{ingest.DefaultTopic, ingest.DefaultDLQTopic} {
		if err := db.CreateTopic(ctx, topic, 1); err != nil {
			t.Fatal(err)
		}
		recs := make([]broker.Record, 10)
		for i := range recs {
			recs[i] = broker.Record{Topic: topic, Partition: 0, Value: []byte("{}"), Timestamp: old}
		}
		if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	// Bronze landed 6 records, the dead-letter query 3.
	for _, c := range []struct {
		ident, query string
		end          int64
	}{{table.Bronze, stream.BronzeQuery, 6}, {table.BronzeDLQ, stream.DLQQuery, 3}} {
		off := stream.NextOffsets{0: c.end}
		if _, err := lake.CommitBatch(ctx, c.ident, table.Batch{Query: c.query, ID: 0, Offsets: string(off.Offset())}); err != nil {
			t.Fatal(err)
		}
	}
	p := &Appliance{cfg: Config{Store: Store{Data: dir}, Retention: time.Hour, DLQRetention: 24 * time.Hour},
		lake: lake, log: slog.New(slog.DiscardHandler)}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.runRetention(runCtx, db) }()
	start := func(topic string) int64 {
		offs, err := db.Offsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		return offs[0].Start
	}
	deadline := time.Now().Add(time.Minute)
	for (start(ingest.DefaultTopic) != 6 || start(ingest.DefaultDLQTopic) != 3) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, dlq := start(ingest.DefaultTopic), start(ingest.DefaultDLQTopic); got != 6 || dlq != 3 {
		t.Fatalf("after the first pass: %s starts at %d (want 6, bronze's floor), %s at %d (want 3, the dead-letter query's)",
			ingest.DefaultTopic, got, ingest.DefaultDLQTopic, dlq)
	}
}
