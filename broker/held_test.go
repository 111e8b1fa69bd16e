package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"lakehouse/broker"
	"lakehouse/broker/brokertest"
)

// TestEachHeld: on a dense log every offset of the range the partition
// still has is held; on a sparse one only the offsets that hold a record,
// found by reading; trimmed offsets are skipped either way.
func TestEachHeld(t *testing.T) {
	ctx := context.Background()
	db := openTopic(t, "t", 2)
	var recs []broker.Record
	for i := range 10 {
		recs = append(recs, broker.Record{Topic: "t", Partition: 1, Value: []byte{byte(i)}})
	}
	if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Retain(ctx, "t", broker.Retention{MaxBytes: 1, Floor: []int64{0, 3}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		log      broker.Log
		from, to int64
		want     string
	}{
		{"dense", db, 0, 100, "[3 4 5 6 7 8 9]"},
		{"dense inner", db, 4, 6, "[4 5]"},
		{"sparse", brokertest.Sparse(db), 0, 100, "[7 9 11 13 15 17 19]"},
		{"sparse inner", brokertest.Sparse(db), 8, 12, "[9 11]"},
		{"sparse from an empty offset", brokertest.Sparse(db), 10, 11, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offs, err := tc.log.Offsets(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			got := []int64{}
			if err := broker.EachHeld(ctx, tc.log, "t", offs[1], tc.from, tc.to, func(o int64) { got = append(got, o) }); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("EachHeld: got %v, want %s", got, tc.want)
			}
			n, err := broker.CountHeld(ctx, tc.log, "t", offs[1], tc.from, tc.to)
			if err != nil || n != int64(len(got)) {
				t.Errorf("CountHeld: got %d, %v; want %d", n, err, len(got))
			}
		})
	}
	if broker.IsSparse(db) || !broker.IsSparse(brokertest.Sparse(db)) {
		t.Error("IsSparse: the bbolt log is dense, the wrapper sparse")
	}
}

// TestHeldCounter: the counter gives the records a topic holds, on a
// sparse log by reading only what was appended since its last count.
func TestHeldCounter(t *testing.T) {
	ctx := context.Background()
	db := openTopic(t, "t", 2)
	sparse := brokertest.Sparse(db)
	c := &broker.HeldCounter{Log: sparse}
	appendN := func(n int) {
		var recs []broker.Record
		for i := range n {
			recs = append(recs, broker.Record{Topic: "t", Partition: i % 2, Value: []byte("x")})
		}
		if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int64 {
		t.Helper()
		ts, err := sparse.Topics(ctx)
		if err != nil || len(ts) != 1 {
			t.Fatalf("topics: %v %v", ts, err)
		}
		n, err := c.Count(ctx, ts[0])
		if err != nil {
			t.Fatal(err)
		}
		if ts[0].Messages() != 2*n {
			t.Fatalf("the sparse log's End-Start %d, want twice the %d records", ts[0].Messages(), n)
		}
		return n
	}
	appendN(10)
	if n := count(); n != 10 {
		t.Fatalf("count: %d, want 10", n)
	}
	appendN(5)
	if n := count(); n != 15 {
		t.Fatalf("count after 5 more: %d, want 15", n)
	}
	if _, err := db.Retain(ctx, "t", broker.Retention{MaxBytes: 1, Floor: []int64{2, 0}}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 13 {
		t.Fatalf("count after retention trimmed 2: %d, want 13", n)
	}
}

// TestSparseWrapperContract: brokertest.Sparse, the stand-in for Kafka's
// offsets in the readers' tests, is itself a Log that passes the contract
// suite's sparse checks.
func TestSparseWrapperContract(t *testing.T) {
	brokertest.Run(t, func(t *testing.T, dir string) broker.Log {
		db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return brokertest.Sparse(db)
	})
}

// openTopic opens a fresh broker with topic of n partitions, closed when
// the test ends.
func openTopic(t *testing.T, topic string, n int) *broker.DB {
	t.Helper()
	db, err := broker.Open(filepath.Join(t.TempDir(), "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.CreateTopic(context.Background(), topic, n); err != nil {
		t.Fatal(err)
	}
	return db
}
