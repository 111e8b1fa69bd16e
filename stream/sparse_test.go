package stream

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/broker/brokertest"
	"lakehouse/table"
)

// TestBrokerSourceSparseOffsets: on a log whose offsets skip (Kafka's
// transaction markers; here brokertest.Sparse, a record at every odd
// offset only), batches planned by the offset cap and by the byte cap read
// every record once, in order, and the last batch ends at the log's End,
// past the trailing offset that holds no record, so a drained source plans
// nothing.
func TestBrokerSourceSparseOffsets(t *testing.T) {
	db := openBroker(t, filepath.Join(t.TempDir(), "broker.db"), 4)
	defer db.Close()
	ctx := ctxT(t, 30*time.Second)
	var recs []broker.Record
	for i := range 400 {
		recs = append(recs, broker.Record{Topic: testTopic, Partition: i % 4, Key: []byte(fmt.Sprintf("%04d", i)),
			Value: bytes.Repeat([]byte("v"), 996+(i%5)*1000)})
	}
	if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
		t.Fatal(err)
	}
	log := brokertest.Sparse(db)
	ends := endOffsets(t, log)
	for _, limit := range []Limit{{Units: 1000}, {Units: 37}, {Units: 1000, Bytes: 20_000}} {
		t.Run(fmt.Sprintf("units=%d,bytes=%d", limit.Units, limit.Bytes), func(t *testing.T) {
			src := NewBrokerSource(log, testTopic, testSchema)
			start, err := src.Earliest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[pair]int{}
			batches := 0
			for {
				end, n, err := src.Plan(ctx, start, limit)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if batches++; batches > 1000 {
					t.Fatal("no end to the batches")
				}
				if n > limit.Units {
					t.Errorf("batch of %d offsets, cap %d", n, limit.Units)
				}
				in, size, err := src.Read(ctx, start, end)
				if err != nil {
					t.Fatal(err)
				}
				rows := countRows(in)
				if limit.Bytes > 0 && size > limit.Bytes && rows > 1 {
					t.Errorf("batch %d: %d records of %d bytes, cap %d", batches, rows, size, limit.Bytes)
				}
				for _, p := range pairsOf(in) {
					if p.o%2 != 1 {
						t.Errorf("record at offset %d of partition %d: the sparse log has records at odd offsets only", p.o, p.p)
					}
					seen[p]++
				}
				release(in)
				start = end
			}
			if len(seen) != 400 {
				t.Errorf("read %d distinct records, want 400", len(seen))
			}
			for p, n := range seen {
				if n != 1 {
					t.Errorf("record %v read %d times", p, n)
				}
			}
			if got, want := start, NextOffsets(ends).Offset(); got != want {
				t.Errorf("drained at %s, want the log's end %s", got, want)
			}
			if lag, err := src.Lag(ctx, start); err != nil || lag != 0 {
				t.Errorf("lag when drained: %d, %v", lag, err)
			}
		})
	}
}

// TestBronzeDrainSparseOffsets: bronze over a sparse log holds every
// record's own offset exactly once, and its marker ends at the log's End.
func TestBronzeDrainSparseOffsets(t *testing.T) {
	ctx := ctxT(t, 120*time.Second)
	db, log, lake := drainSparse(ctx, t)
	seen := map[pair]int{}
	for _, p := range bronzePairs(t, lake) {
		seen[p]++
	}
	dense := endOffsets(t, db)
	var want int
	for p, end := range dense {
		for k := range end {
			want++
			if n := seen[pair{p: p, o: 2*k + 1}]; n != 1 {
				t.Errorf("partition %d offset %d: %d rows, want 1", p, 2*k+1, n)
			}
		}
	}
	if len(seen) != want {
		t.Errorf("bronze holds %d distinct offsets, the log %d records", len(seen), want)
	}
	m, ok, err := lake.LastCommitted(ctx, table.Bronze, BronzeQuery)
	if err != nil || !ok {
		t.Fatalf("marker: %v %v", ok, err)
	}
	if want := NextOffsets(endOffsets(t, log)).Offset(); Offset(m.Offsets) != want {
		t.Errorf("marker: got %s, want %s", m.Offsets, want)
	}
}

// drainSparse drains 3,000 records over 4 partitions, through
// brokertest.Sparse, into bronze in batches of at most 700 offsets, and
// returns the dense log under the wrapper, the wrapper and the lake (both
// closed when the test ends).
func drainSparse(ctx context.Context, t *testing.T) (*broker.DB, broker.Log, *table.Lake) {
	t.Helper()
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 4)
	t.Cleanup(func() { db.Close() })
	fill(t, db, 3000, 1000)
	log := brokertest.Sparse(db)
	lake := openLake(t, dir)
	t.Cleanup(func() { lake.Close() })
	q, err := NewBronze(log, lake, Config{DataDir: dir, MaxOffsetsPerTrigger: 700, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	return db, log, lake
}
