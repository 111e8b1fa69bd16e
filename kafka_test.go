package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"lakehouse/verify"
)

// TestProveKafkaS3 is the kill test with the broker on Kafka and the
// warehouse on S3, both served by the test process on loopback (kfake with
// transactions, gofakes3) and outliving every kill: the appliance child
// (`run --broker kafka://... --warehouse s3://...`) is SIGKILLed three
// times mid-backlog, restarted, drained, and verified against the records
// Kafka holds, read with read-committed isolation. It is inconclusive if
// the appliance made a broker.db or a local warehouse of its own, or if
// Kafka's offsets never skipped (then the counting of held records was
// never needed).
func TestProveKafkaS3(t *testing.T) {
	cfg := proveConfig(t)
	cfg.Kills = 3
	cfg.Loops = 6
	cfg.Trigger = 300 * time.Millisecond
	cfg.Kafka = true
	cfg.S3 = true
	res := provePasses(t, cfg)
	for _, local := range []string{"broker.db", "warehouse"} {
		if _, err := os.Stat(filepath.Join(cfg.DataDir, local)); err == nil {
			t.Fatalf("inconclusive: the appliance made %s of its own in %s", local, cfg.DataDir)
		}
	}
	checkOffsetsSkipped(t, res)
}

// checkOffsetsSkipped fails the test as inconclusive unless the broker's
// offsets spanned more than the records it held (Kafka's commit markers).
func checkOffsetsSkipped(t *testing.T, res verify.ProveResult) {
	t.Helper()
	var span int64
	for _, p := range res.Report.Counts.Partitions {
		span += p.BrokerEnd - p.BrokerStart
	}
	if c := res.Report.Counts; span <= c.Broker {
		t.Fatalf("inconclusive: the broker's offsets span %d for %d records: none skipped", span, c.Broker)
	}
	t.Logf("Kafka offsets span %d for %d records", span, res.Report.Counts.Broker)
}

// TestProveKafkaIngestCrash kills the appliance inside ingest's Kafka
// transaction, after its records were produced and before the commit
// (fault hook kafka.after-produce), and twice more at random: the
// restarted producer aborts that transaction, so neither its events nor
// the resume position it carried are ever read, the SSE client resumes
// from the last committed position, and every event is in bronze once and
// in silver. A position ahead of the committed events would lose events:
// the broker's count check and silver-complete would fail.
func TestProveKafkaIngestCrash(t *testing.T) {
	cfg := proveConfig(t)
	cfg.Kafka = true
	cfg.Loops = 10
	cfg.Kills = 2
	cfg.Trigger = 300 * time.Millisecond
	cfg.CrashAt = "kafka.after-produce"
	cfg.Rate = 1000 // the hook fires on every ingest batch: pace it mid-backlog
	cfg.CrashSkip = 8
	res := provePasses(t, cfg)
	if res.Hook != "kafka.after-produce" {
		t.Fatalf("inconclusive: the first kill was not at kafka.after-produce (%q)", res.Hook)
	}
	checkOffsetsSkipped(t, res)
}
