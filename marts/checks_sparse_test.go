package marts

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"lakehouse/broker"
	"lakehouse/broker/brokertest"
	"lakehouse/table"
)

// TestBronzeOffsetsCheckSparse: over a log whose offsets skip (Kafka's
// transaction markers; brokertest.Sparse holds records at odd offsets
// only) the offsets check counts the records the broker holds: a bronze
// holding each of them once passes, in full and incrementally, with the
// broker's true count, and a record bronze lacks is still a missing offset.
func TestBronzeOffsetsCheckSparse(t *testing.T) {
	ctx := context.Background()
	db, err := broker.Open(filepath.Join(t.TempDir(), "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateTopic(ctx, DefaultTopic, 1); err != nil {
		t.Fatal(err)
	}
	log := brokertest.Sparse(db)
	// publish appends n records and returns their (sparse) offsets.
	publish := func(n int) []int64 {
		recs := make([]broker.Record, n)
		for i := range recs {
			recs[i] = broker.Record{Topic: DefaultTopic, Partition: 0, Value: []byte("{}")}
		}
		pos, err := log.Append(ctx, broker.Batch{Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int64, n)
		for i, p := range pos {
			out[i] = p.Offset
		}
		return out
	}
	rows := offsetRows
	lake := openTestLake(t, t.TempDir())
	m := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler)})
	check := func() Check { t.Helper(); return offsetsCheck(t, m) }
	commit(t, lake, table.Bronze, "bronze", 0, table.BronzeSchema, rows(publish(100)))
	if c := check(); !c.Passed || !strings.Contains(c.Message, "every row counted") || c.Numbers["broker_messages"] != 100 || c.Numbers["lag"] != 0 {
		t.Fatalf("first check: %s %v; want a pass counting every row, 100 broker messages, no lag", c, c.Numbers)
	}
	commit(t, lake, table.Bronze, "bronze", 1, table.BronzeSchema, rows(publish(50)))
	pending := publish(5)
	if c := check(); !c.Passed || !strings.Contains(c.Message, "50 rows added since the last check") ||
		c.Numbers["broker_messages"] != 155 || c.Numbers["lag"] != 5 {
		t.Fatalf("second check: %s %v; want an incremental pass, 155 broker messages, lag 5", c, c.Numbers)
	}
	commit(t, lake, table.Bronze, "bronze", 2, table.BronzeSchema, rows(append(pending[1:], publish(10)...)))
	if c := check(); c.Passed || !strings.Contains(c.Message, "1 missing offsets") {
		t.Fatalf("third check: %s; want a failure naming 1 missing offsets (offset %d)", c, pending[0])
	}
}
