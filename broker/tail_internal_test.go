package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func tailValue(j int) []byte {
	return fmt.Appendf(nil, `{"seq":%d,"title":"Page %d","comment":"fix %d","pad":"%0300d"}`, j, j%97, j, j)
}

// tailShape is what the file holds: frames in the tail bucket, and each
// partition's end and sealed batches as its state and 'z' bucket say.
type tailShape struct {
	frames  int
	ends    [2]int64
	batches [2]int
	meta    []byte // the meta bucket's "pos"
}

func shapeOf(t *testing.T, d *DB) tailShape {
	t.Helper()
	var s tailShape
	err := d.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketTail); b != nil {
			s.frames = b.Stats().KeyN
		}
		tb := tx.Bucket(topicBucketName("t"))
		for p := 0; p < 2; p++ {
			st, err := decodeState(tb.Get(partKey('s', p)))
			if err != nil {
				return err
			}
			s.ends[p] = st.end
			if zb := tb.Bucket(partKey('z', p)); zb != nil {
				s.batches[p] = zb.Stats().KeyN
			}
		}
		s.meta = append([]byte(nil), tx.Bucket(bucketMeta).Get([]byte("pos"))...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkTailRecords reads records 0..n-1 (record j in partition j%2 at
// offset j/2) and the producer metadata back from d.
func checkTailRecords(t *testing.T, d *DB, n int, pos string) {
	t.Helper()
	ctx := context.Background()
	offs, err := d.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for p := 0; p < 2; p++ {
		want := int64((n - p + 1) / 2)
		if offs[p].End != want {
			t.Fatalf("partition %d ends at %d, want %d", p, offs[p].End, want)
		}
		msgs, err := d.Read(ctx, "t", p, 0, 0)
		if err != nil {
			t.Fatalf("read partition %d: %v", p, err)
		}
		if int64(len(msgs)) != want {
			t.Fatalf("partition %d: %d records read, want %d", p, len(msgs), want)
		}
		for _, m := range msgs {
			j := int(m.Offset)*2 + p
			if string(m.Value) != string(tailValue(j)) || string(m.Key) != fmt.Sprintf("k%d", j) || m.Timestamp.Unix() != 1e9+int64(j) {
				t.Fatalf("partition %d offset %d reads back %q", p, m.Offset, m.Value)
			}
		}
	}
	if v, err := d.Meta(ctx, "pos"); err != nil || string(v) != pos {
		t.Fatalf("meta pos = %q, %v; want %q", v, err, pos)
	}
}

func appendTailRecords(t *testing.T, d *DB, from, to int) {
	t.Helper()
	var recs []Record
	for j := from; j < to; j++ {
		recs = append(recs, Record{Topic: "t", Partition: j % 2, Key: fmt.Appendf(nil, "k%d", j), Value: tailValue(j), Timestamp: time.Unix(1e9+int64(j), 0)})
	}
	if _, err := d.Append(context.Background(), Batch{Records: recs, Meta: []Meta{{Key: "pos", Value: fmt.Appendf(nil, "%d", to)}}}); err != nil {
		t.Fatal(err)
	}
}

// TestTailCommitsWriteOnlyTheTail: with Compress, a commit that fills no
// batch writes one tail frame and leaves the partitions' states, records
// and the meta bucket as they were; its records and metadata read back
// (also after a reopen, read-only or not, by a DB without Compress); the
// commit that fills a batch seals the tail's records and its own into
// their partitions and empties the tail, and every record still reads
// back once, in order.
func TestTailCommitsWriteOnlyTheTail(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "broker.db")
	opts := Options{Compress: true, CompressBatchBytes: 16 << 10}
	d, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CreateTopic(ctx, "t", 2); err != nil {
		t.Fatal(err)
	}
	n := 0
	for range 5 { // 15 records of about 380 bytes: 3 KiB per partition
		appendTailRecords(t, d, n, n+3)
		n += 3
	}
	if s := shapeOf(t, d); s.frames != 5 || s.ends != [2]int64{} || s.meta != nil {
		t.Fatalf("after 5 small commits the file holds %+v; want 5 frames and the partitions and meta untouched", s)
	}
	checkTailRecords(t, d, n, "15")
	d.Close()

	for _, o := range []Options{{ReadOnly: true}, {}} {
		r, err := Open(path, o)
		if err != nil {
			t.Fatalf("reopen %+v: %v", o, err)
		}
		checkTailRecords(t, r, n, "15")
		r.Close()
	}

	if d, err = Open(path, opts); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	sealed := false
	for !sealed && n < 400 {
		appendTailRecords(t, d, n, n+3)
		n += 3
		s := shapeOf(t, d)
		if s.batches[0] > 0 {
			sealed = true
			want := [2]int64{int64((n + 1) / 2), int64(n / 2)}
			if s.frames != 0 || s.ends != want || string(s.meta) != fmt.Sprint(n) {
				t.Fatalf("after the sealing commit the file holds %+v; want no frame, ends %v, meta %d", s, want, n)
			}
		} else if s.ends != [2]int64{} {
			t.Fatalf("partition states moved (%+v) before any batch was sealed", s)
		}
		checkTailRecords(t, d, n, fmt.Sprint(n))
	}
	if !sealed {
		t.Fatalf("inconclusive: %d records never filled a 16 KiB batch", n)
	}
	appendTailRecords(t, d, n, n+3) // a new tail over sealed batches
	n += 3
	if s := shapeOf(t, d); s.frames != 1 {
		t.Fatalf("after a small commit over sealed batches: %+v, want 1 frame", s)
	}
	checkTailRecords(t, d, n, fmt.Sprint(n))
	d.Close()
	if d, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	checkTailRecords(t, d, n, fmt.Sprint(n))
	appendTailRecords(t, d, n, n+3) // without Compress: the tail goes into the partitions
	n += 3
	if s := shapeOf(t, d); s.frames != 0 {
		t.Fatalf("a commit without Compress left the tail: %+v", s)
	}
	checkTailRecords(t, d, n, fmt.Sprint(n))
}

// TestCorruptTailRefused: a tail frame with a flipped byte makes Open
// refuse the file (ErrNotBroker and ErrCorruptBatch, naming the file and
// the frame) instead of serving the records before it without it.
func TestCorruptTailRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "broker.db")
	d, err := Open(path, Options{Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CreateTopic(ctx, "t", 2); err != nil {
		t.Fatal(err)
	}
	appendTailRecords(t, d, 0, 4)
	appendTailRecords(t, d, 4, 8)
	d.Close()
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTail)
		if b == nil || b.Get(seqKey(1)) == nil {
			return errors.New("inconclusive: no tail frame 1")
		}
		v := append([]byte(nil), b.Get(seqKey(1))...)
		v[len(v)-6] ^= 0x10
		return b.Put(seqKey(1), v)
	})
	bdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{ReadOnly: true})
	if !errors.Is(err, ErrCorruptBatch) || !errors.Is(err, ErrNotBroker) {
		t.Fatalf("open with a damaged tail frame: %v; want ErrNotBroker and ErrCorruptBatch", err)
	}
	for _, want := range []string{path, "tail frame 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %q", err, want)
		}
	}
}
