package broker_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"lakehouse/broker"
	"lakehouse/internal/boltfile"
)

// TestDamagedLeafFoundByFirstRead: a garbled leaf of records in the middle
// of the log is not read by Open (which reads a few pages whatever the
// log's size), so Open succeeds; the first read that reaches it returns an
// error naming the file and wrapping ErrNotBroker and boltfile.ErrDamaged,
// never a panic or a fault; reads of the other partitions and appends
// still work; CheckFile refuses the file, naming it.
func TestDamagedLeafFoundByFirstRead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "broker.db")
	db, err := broker.Open(path, broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := fillLog(t, db, 8)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The leaves of records, in page order: garble the middle one.
	var leaves []int
	var pageSize int
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.View(func(tx *bolt.Tx) error {
		pageSize = tx.DB().Info().PageSize
		for id := 2; int64(id)*int64(pageSize) < tx.Size(); id++ {
			if p, err := tx.Page(id); err == nil && p != nil && p.Type == "leaf" && p.Count > 3 {
				leaves = append(leaves, id)
			}
		}
		return nil
	})
	bdb.Close()
	if err != nil || len(leaves) < 100 {
		t.Fatalf("inconclusive: %d leaves (%v)", len(leaves), err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5, 0x17, 0xFF, 0x03}, pageSize/4), int64(leaves[len(leaves)/2])*int64(pageSize)); err != nil {
		t.Fatal(err)
	}
	f.Close()

	db, err = broker.Open(path, broker.Options{})
	if err != nil {
		t.Fatalf("Open read a leaf of records: %v", err)
	}
	defer db.Close()
	refused, read := 0, 0
	for p := range 4 {
		msgs, err := db.Read(ctx, "t", p, 0, 0)
		switch {
		case err == nil:
			read += len(msgs)
		case errors.Is(err, broker.ErrNotBroker) && errors.Is(err, boltfile.ErrDamaged) && strings.Contains(err.Error(), path):
			t.Logf("partition %d: %v", p, err)
			refused++
		default:
			t.Fatalf("partition %d: %v, want nil or a damaged-file error naming %s", p, err, path)
		}
	}
	if refused != 1 || read < n/2 {
		t.Fatalf("%d partitions refused, %d records read of %d: want one refused, the others read", refused, read, n)
	}
	if _, err := db.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "t", Partition: broker.AnyPartition, Value: []byte("after")}}}); err != nil {
		t.Fatalf("append after a damaged page was found elsewhere: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := broker.CheckFile(path); !errors.Is(err, broker.ErrNotBroker) || !strings.Contains(err.Error(), path) {
		t.Fatalf("CheckFile of a file with a garbled leaf: %v, want an error naming it", err)
	}
}
