package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lakehouse/internal/boltfile"
)

// appendRecords appends n records of 1.3 KB to topic "t", round robin over
// its partitions, 500 a commit; each value starts with its sequence number
// from seq on.
func appendRecords(t *testing.T, d *DB, seq, n int) {
	t.Helper()
	for i := 0; i < n; i += 500 {
		recs := make([]Record, 0, 500)
		for j := seq + i; j < seq+min(n, i+500); j++ {
			recs = append(recs, Record{Topic: "t", Partition: AnyPartition, Value: seqValue(j), Timestamp: time.Now()})
		}
		if _, err := d.Append(context.Background(), Batch{Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
}

// seqValue is record j's value: j, then bytes that do not compress, so a
// compressed broker's file grows as a plain one's does.
func seqValue(j int) []byte {
	v := make([]byte, 1300)
	binary.BigEndian.PutUint64(v, uint64(j))
	var seed [32]byte
	binary.BigEndian.PutUint64(seed[:], uint64(j))
	_, _ = rand.NewChaCha8(seed).Read(v[8:])
	return v
}

// allDue makes every record older than MaxAge.
var allDue = Retention{MaxAge: time.Nanosecond, Now: time.Now().Add(time.Hour)}

// pagesSlack is what a retention pass may free beyond its budget: per
// partition, the last record's page and the branch pages the trim's
// copy-on-write frees.
const pagesSlack = 4 * 8

// TestRetainPacedByAppends: a pass after a backlog came due frees about
// the free-page budget, shared evenly between the partitions, not the
// whole backlog; a pass with no appends since frees nothing more; after
// appends a pass frees about what they took plus the budget; the free
// pages never exceed what the budget allows.
func TestRetainPacedByAppends(t *testing.T) {
	ctx := context.Background()
	d, err := Open(filepath.Join(t.TempDir(), "broker.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.retainFreeBudget = 256 // 2 MiB
	if err := d.CreateTopic(ctx, "t", 4); err != nil {
		t.Fatal(err)
	}
	appendRecords(t, d, 0, 16_000) // 20 MiB
	if n, err := d.Retain(ctx, "t", Retention{MaxAge: time.Hour}); err != nil || n != 0 {
		t.Fatalf("nothing due: %d trimmed, %v", n, err)
	}
	starts := func() []int64 {
		offs, err := d.Offsets(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		var s []int64
		for _, o := range offs {
			s = append(s, o.Start)
		}
		return s
	}
	budget := d.freePages() + 256 // what the pass may leave: nothing appended since the last one
	n1, err := d.Retain(ctx, "t", allDue)
	if err != nil {
		t.Fatal(err)
	}
	free := d.freePages()
	t.Logf("backlog of 16000 records due: %d trimmed per partition %v, %d pages free", n1, starts(), free)
	// 256 pages of 8 KiB hold about 1600 records of 1.3 KB.
	if n1 < 1000 || n1 > 2200 || free > budget+pagesSlack {
		t.Fatalf("a pass with a budget of 256 pages trimmed %d records and left %d pages free", n1, free)
	}
	for p, s := range starts() {
		if s < n1/4-150 || s > n1/4+150 {
			t.Errorf("partition %d trimmed %d records of %d: not an even share", p, s, n1)
		}
	}
	n2, err := d.Retain(ctx, "t", allDue)
	if err != nil {
		t.Fatal(err)
	}
	if n2 > 4*6 {
		t.Fatalf("a pass with no appends since the last one trimmed %d records", n2)
	}
	appendRecords(t, d, 16_000, 4000) // 5 MiB: about 640 pages
	before := d.freePages()
	n3, err := d.Retain(ctx, "t", allDue)
	if err != nil {
		t.Fatal(err)
	}
	free = d.freePages()
	t.Logf("after 4000 appends (%d pages free): %d trimmed, %d pages free", before, n3, free)
	if n3 < 3500 || n3 > 6500 || free > 256+640+pagesSlack {
		t.Fatalf("after 4000 appends a pass trimmed %d records and left %d pages free", n3, free)
	}
	d.retainFreeBudget = 1 << 30
	n4, err := d.Retain(ctx, "t", allDue)
	if err != nil {
		t.Fatal(err)
	}
	if total := n1 + n2 + n3 + n4; total != 20_000 {
		t.Fatalf("with room for all, retention trimmed %d records in all, want 20000", total)
	}
}

// TestFreelistPersistedUnderRetention: appends, retention trimming the
// front (with a small budget, so passes stop early) and read transactions
// held open across many commits (the pages they see stay pending in the
// freelist): the old transactions read their snapshot back unchanged; the
// file then passes bbolt's own consistency check (Tx.Check: every page
// reachable once or free, none both) and boltfile.Check, its persisted
// freelist lists what bbolt counts free, and a reopened broker reads every
// record retention kept. Both layouts: records stored one by one, and
// sealed into compressed batches behind the open tail (Compress, as the
// appliance runs).
func TestFreelistPersistedUnderRetention(t *testing.T) {
	// A tail commit frees the tail's last pages, which the held readers
	// keep pending: the compressed layout needs a larger free-page budget
	// before retention may trim at all.
	for _, tc := range []struct {
		compress bool
		budget   int64
	}{{false, 64}, {true, 1024}} {
		t.Run(fmt.Sprintf("compress=%v", tc.compress), func(t *testing.T) {
			freelistUnderRetention(t, Options{Compress: tc.compress}, tc.budget)
		})
	}
}

func freelistUnderRetention(t *testing.T, opts Options, budget int64) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "broker.db")
	d, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	d.retainFreeBudget = budget
	if err := d.CreateTopic(ctx, "t", 4); err != nil {
		t.Fatal(err)
	}
	seq, maxPending := 0, 0
	for round := range 12 {
		reader, err := d.db.Begin(false) // a reader held across the round
		if err != nil {
			t.Fatal(err)
		}
		startOf := func(tx *bolt.Tx) []byte { // partition 0's first record and first batch
			var first []byte
			for _, prefix := range []byte{'r', 'z'} {
				if b := tx.Bucket(topicBucketName("t")).Bucket(partKey(prefix, 0)); b != nil {
					k, v := b.Cursor().First()
					first = append(append(first, k...), v...)
				}
			}
			return first
		}
		seen := startOf(reader)
		for range 3 {
			appendRecords(t, d, seq, 1000)
			seq += 1000
			if _, err := d.Retain(ctx, "t", Retention{MaxBytes: 2 << 20}); err != nil {
				t.Fatal(err)
			}
			maxPending = max(maxPending, d.db.Stats().PendingPageN)
		}
		if got := startOf(reader); round > 0 && !bytes.Equal(got, seen) {
			t.Fatalf("round %d: a reader's snapshot changed under it", round)
		}
		if err := reader.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
	offs, err := d.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if offs[0].Start == 0 || maxPending < 100 {
		t.Fatalf("inconclusive: retention moved partition 0 to %d, at most %d pages pending", offs[0].Start, maxPending)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatalf("bbolt's consistency check: %v", err)
	}
	s, err := boltfile.Check(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records appended, partitions start at %d..; %d pages: %d reachable, %d free; at most %d pending",
		seq, offs[0].Start, s.Pages, s.Reachable, s.Free, maxPending)

	d, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	kept := 0
	for p, o := range offs {
		msgs, err := d.Read(ctx, "t", p, o.Start, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			j := int(binary.BigEndian.Uint64(m.Value))
			if !bytes.Equal(m.Value, seqValue(j)) || i > 0 && j <= int(binary.BigEndian.Uint64(msgs[i-1].Value)) {
				t.Fatalf("partition %d offset %d: record %d reads back changed or out of order", p, m.Offset, j)
			}
		}
		kept += len(msgs)
		if int64(len(msgs)) != o.End-o.Start {
			t.Fatalf("partition %d holds %d records, its offsets say %d", p, len(msgs), o.End-o.Start)
		}
	}
	if kept == 0 || kept == seq {
		t.Fatalf("inconclusive: retention kept %d of %d records", kept, seq)
	}
}
