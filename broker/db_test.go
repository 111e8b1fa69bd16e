package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lakehouse/broker"
	"lakehouse/broker/brokertest"
)

func openDB(t *testing.T, dir string) broker.Log {
	t.Helper()
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestLogContract(t *testing.T) {
	brokertest.Run(t, openDB)
}

func TestOpenRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	odb, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := odb.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("someone-else")); return err }); err != nil {
		t.Fatal(err)
	}
	odb.Close()
	// A broker file whose two meta pages are overwritten: corrupt (one
	// damaged meta page alone is recovered by bbolt from the other).
	corrupt := filepath.Join(dir, "corrupt.db")
	db, err := broker.Open(corrupt, broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	data, err := os.ReadFile(corrupt)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2*32<<10 && i < len(data); i++ {
		data[i] = 0xAB
	}
	if err := os.WriteFile(corrupt, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{garbage, other, corrupt} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			before, _ := os.ReadFile(path)
			db, err := broker.Open(path, broker.Options{})
			if err == nil {
				db.Close()
				t.Fatalf("Open(%s) succeeded; want an error", path)
			}
			if !errors.Is(err, broker.ErrNotBroker) {
				t.Fatalf("Open(%s): got %v, want ErrNotBroker", path, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			after, _ := os.ReadFile(path)
			if string(before) != string(after) {
				t.Fatalf("Open(%s) modified the file", path)
			}
		})
	}
}

func TestRetention(t *testing.T) {
	ctx := context.Background()
	db := openTopic(t, "t", 2)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 100; i++ {
		_, err := db.Append(ctx, broker.Batch{Records: []broker.Record{
			{Topic: "t", Partition: 0, Value: make([]byte, 100), Timestamp: base.Add(time.Duration(i) * time.Minute)},
			{Topic: "t", Partition: 1, Value: make([]byte, 100), Timestamp: base.Add(time.Duration(i) * time.Minute)},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	now := base.Add(100 * time.Minute)
	// Age: records older than 30 minutes go, except past the floor on partition 1.
	n, err := db.Retain(ctx, "t", broker.Retention{MaxAge: 30 * time.Minute, Floor: []int64{1000, 40}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	offs, _ := db.Offsets(ctx, "t")
	if offs[0].Start != 70 || offs[1].Start != 40 || n != 70+40 {
		t.Fatalf("after age retention: starts %d/%d, removed %d; want 70/40, 110", offs[0].Start, offs[1].Start, n)
	}
	if offs[0].End != 100 || offs[0].Bytes != 30*100 {
		t.Fatalf("partition 0 after retention: end %d bytes %d; want 100, 3000", offs[0].End, offs[0].Bytes)
	}
	if ti := (broker.TopicInfo{Name: "t", Partitions: offs}); ti.Messages() != 90 || ti.Stored() != 200 {
		t.Fatalf("after age retention: %d readable, %d stored; want 90 and 200 (trimmed ones count as stored)", ti.Messages(), ti.Stored())
	}
	if _, err := db.Read(ctx, "t", 0, 69, 1); !errors.Is(err, broker.ErrOffsetTrimmed) {
		t.Fatalf("Read of a trimmed offset: got %v, want ErrOffsetTrimmed", err)
	}
	if msgs, err := db.Read(ctx, "t", 0, 70, 1); err != nil || len(msgs) != 1 || msgs[0].Offset != 70 {
		t.Fatalf("Read at the new start: got %v, %v", msgs, err)
	}
	// Size: keep at most 1,000 bytes per partition.
	if _, err := db.Retain(ctx, "t", broker.Retention{MaxBytes: 1000}); err != nil {
		t.Fatal(err)
	}
	offs, _ = db.Offsets(ctx, "t")
	for _, o := range offs {
		if o.Bytes > 1000 || o.End-o.Start != 10 {
			t.Fatalf("partition %d after size retention: %d records, %d bytes; want 10, <= 1000", o.Partition, o.End-o.Start, o.Bytes)
		}
	}
	// Offsets are never reused after trimming everything.
	if _, err := db.Retain(ctx, "t", broker.Retention{MaxBytes: 1}); err != nil {
		t.Fatal(err)
	}
	pos, err := db.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "t", Partition: 0, Value: []byte("x")}}})
	if err != nil || pos[0].Offset != 100 {
		t.Fatalf("append after trimming all: got %v, %v; want offset 100", pos, err)
	}
}
