package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// writeFormat1 writes a broker file as the first format did (every record
// its own value in bucket 'r', 24-byte partition states, format marker
// lakehouse-broker/1): n records of topic "t", 2 partitions.
func writeFormat1(t *testing.T, path string, n int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		info, _ := tx.CreateBucket(bucketInfo)
		if err := info.Put(keyFormat, []byte(formatV1)); err != nil {
			return err
		}
		tx.CreateBucket(bucketMeta)
		topics, _ := tx.CreateBucket(bucketTopics)
		if err := topics.Put([]byte("t"), []byte{0, 0, 0, 2}); err != nil {
			return err
		}
		tb, _ := tx.CreateBucket(topicBucketName("t"))
		for p := 0; p < 2; p++ {
			rb, _ := tb.CreateBucket(partKey('r', p))
			var bytes int64
			var off int64
			for j := p; j < n; j += 2 {
				r := Record{Value: format1Value(j), Timestamp: time.Unix(1e9+int64(j), 0)}
				if err := rb.Put(offsetKey(off), encodeRecord(nil, &r)); err != nil {
					return err
				}
				bytes += int64(len(r.Value))
				off++
			}
			st := make([]byte, 24)
			binary.BigEndian.PutUint64(st[8:], uint64(off))
			binary.BigEndian.PutUint64(st[16:], uint64(bytes))
			if err := tb.Put(partKey('s', p), st); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func format1Value(j int) []byte { return fmt.Appendf(nil, `{"seq":%d,"pad":"%0200d"}`, j, j) }

// TestFormat1FileStaysReadable: a broker.db of the first format opens
// read-only unchanged; opened with Compress it takes appends that seal
// batches after its old records, reads every record of both formats in
// one range, marks itself format 3 (so an older binary refuses it by
// name), and retention trims through the old records into the batches.
func TestFormat1FileStaysReadable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "broker.db")
	writeFormat1(t, path, 1000)
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open a format-1 file read-only: %v", err)
	}
	if msgs, err := ro.Read(ctx, "t", 1, 0, 0); err != nil || len(msgs) != 500 || string(msgs[499].Value) != string(format1Value(999)) {
		t.Fatalf("read-only format 1: %d records, %v", len(msgs), err)
	}
	ro.Close()

	d, err := Open(path, Options{Compress: true, CompressBatchBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1000; i < 3000; i += 10 {
		var recs []Record
		for j := i; j < i+10; j++ {
			recs = append(recs, Record{Topic: "t", Partition: j % 2, Value: format1Value(j), Timestamp: time.Unix(1e9+int64(j), 0)})
		}
		if _, err := d.Append(ctx, Batch{Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(from int64) {
		t.Helper()
		for p := 0; p < 2; p++ {
			msgs, err := d.Read(ctx, "t", p, from, 0)
			if err != nil {
				t.Fatalf("partition %d: %v", p, err)
			}
			if len(msgs) != 1500-int(from) {
				t.Fatalf("partition %d from %d: %d records, want %d", p, from, len(msgs), 1500-from)
			}
			for _, m := range msgs {
				if j := int(m.Offset)*2 + p; string(m.Value) != string(format1Value(j)) || m.Timestamp.Unix() != 1e9+int64(j) {
					t.Fatalf("partition %d offset %d: %q", p, m.Offset, m.Value)
				}
			}
		}
	}
	check(0)
	var batches, old int
	err = d.view(func(tx *bolt.Tx) error {
		if got := string(tx.Bucket(bucketInfo).Get(keyFormat)); got != formatValue {
			return fmt.Errorf("format marker %q after appends, want %q", got, formatValue)
		}
		tb := tx.Bucket(topicBucketName("t"))
		batches = tb.Bucket(partKey('z', 0)).Stats().KeyN
		old = tb.Bucket(partKey('r', 0)).Stats().KeyN
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if batches < 10 || old < 500 {
		t.Fatalf("inconclusive: %d sealed batches, %d records stored one by one in partition 0", batches, old)
	}
	// Records 0..1399 (offsets 0..699 of each partition) are due.
	cut := Retention{MaxAge: time.Hour, Now: time.Unix(1e9+1400, 0).Add(time.Hour)}
	if _, err := d.Retain(ctx, "t", cut); err != nil {
		t.Fatal(err)
	}
	offs, err := d.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs {
		if o.Start != 700 {
			t.Fatalf("partition %d starts at %d after retention, want 700", o.Partition, o.Start)
		}
	}
	check(700)
	d.Close()
	if d, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	check(700)
}
