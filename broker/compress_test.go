package broker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lakehouse/broker"
	"lakehouse/broker/brokertest"
	"lakehouse/internal/fault"
)

// TestLogContractCompressed: the contract holds with every record in a
// compressed batch (a batch sealed at every commit), and with records
// split between sealed batches and open ones.
func TestLogContractCompressed(t *testing.T) {
	for _, seal := range []int{1, 2 << 10} {
		t.Run(fmt.Sprintf("seal%d", seal), func(t *testing.T) {
			brokertest.Run(t, func(t *testing.T, dir string) broker.Log {
				db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{Compress: true, CompressBatchBytes: seal})
				if err != nil {
					t.Fatal(err)
				}
				return db
			})
		})
	}
}

// eventValue is a JSON value shaped like a stream event, varied per i.
func eventValue(i int) []byte {
	return fmt.Appendf(nil, `{"$schema":"/mediawiki/recentchange/1.0.1","meta":{"uri":"https://en.wikipedia.org/wiki/Page_%d","id":"%08x-1f2e-4c5d-9a8b-%012x","dt":"2026-12-05T12:00:%02dZ","domain":"en.wikipedia.org","stream":"mediawiki.recentchange"},"type":"edit","namespace":0,"title":"Page %d","comment":"/* Section */ fix typo %d","timestamp":%d,"user":"User%d","bot":false,"minor":true,"length":{"old":%d,"new":%d},"revision":{"old":%d,"new":%d},"server_url":"https://en.wikipedia.org","wiki":"enwiki"}`,
		i%977, i, i*7919, i%60, i%977, i, 1764936000+i, i%131, 1000+i%5000, 1010+i%5000, 9000000+i, 9000001+i)
}

// TestCompressedStoresLess: with Compress, records shaped like the
// stream's take at most a third of their key and value bytes in the file
// (Offsets' Stored), read back byte for byte, and Sizes still says their
// key and value sizes; without, Stored is at least the bytes held.
func TestCompressedStoresLess(t *testing.T) {
	ctx := context.Background()
	for _, compress := range []bool{false, true} {
		db, err := broker.Open(filepath.Join(t.TempDir(), "broker.db"), broker.Options{Compress: compress})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.CreateTopic(ctx, "t", 2); err != nil {
			t.Fatal(err)
		}
		const n = 6000
		for i := 0; i < n; i += 7 { // the real stream's commits: a few records each
			var recs []broker.Record
			for j := i; j < min(n, i+7); j++ {
				recs = append(recs, broker.Record{Topic: "t", Partition: j % 2, Key: fmt.Appendf(nil, "k%d", j), Value: eventValue(j), Timestamp: time.Unix(1e9+int64(j), 0)})
			}
			if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
				t.Fatal(err)
			}
		}
		offs, err := db.Offsets(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		var held, stored int64
		for _, o := range offs {
			held += o.Bytes
			stored += o.Stored
			msgs, err := db.Read(ctx, "t", o.Partition, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			sizes, err := db.Sizes(ctx, "t", o.Partition, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range msgs {
				j := int(m.Offset)*2 + o.Partition
				if string(m.Value) != string(eventValue(j)) || string(m.Key) != fmt.Sprintf("k%d", j) || m.Timestamp.Unix() != 1e9+int64(j) {
					t.Fatalf("compress %v: %d/%d reads back changed", compress, o.Partition, m.Offset)
				}
				if sizes[i] != int64(len(m.Key)+len(m.Value)) {
					t.Fatalf("compress %v: %d/%d: size %d, want %d", compress, o.Partition, m.Offset, sizes[i], len(m.Key)+len(m.Value))
				}
			}
		}
		t.Logf("compress %v: %d records, %d bytes of key+value, %d stored (%.0f per record)", compress, n, held, stored, float64(stored)/n)
		switch {
		case compress && stored*3 > held:
			t.Errorf("compressed: %d bytes stored for %d held, want at most a third", stored, held)
		case !compress && stored < held:
			t.Errorf("uncompressed: %d bytes stored for %d held, want at least as many", stored, held)
		}
		db.Close()
	}
}

// TestCorruptBatchRefused: a sealed batch whose payload or header is
// damaged is refused by Read with an error naming the file, the partition
// and the batch's offsets, wrapping ErrCorruptBatch; no record of it is
// returned; the other partition still reads.
func TestCorruptBatchRefused(t *testing.T) {
	ctx := context.Background()
	for _, at := range []string{"payload", "header"} {
		t.Run(at, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "broker.db")
			db, err := broker.Open(path, broker.Options{Compress: true, CompressBatchBytes: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.CreateTopic(ctx, "t", 2); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 40; i += 10 {
				var recs []broker.Record
				for j := i; j < i+10; j++ {
					recs = append(recs, broker.Record{Topic: "t", Partition: j % 2, Value: eventValue(j)})
				}
				if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			// Flip one byte of partition 1's batch at offset 5 (a batch a
			// record: CompressBatchBytes 1).
			bdb, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = bdb.Update(func(tx *bolt.Tx) error {
				zb := tx.Bucket([]byte("t:t")).Bucket([]byte{'z', 0, 0, 0, 1})
				k := []byte{0, 0, 0, 0, 0, 0, 0, 5}
				v := zb.Get(k)
				if v == nil {
					return errors.New("inconclusive: no sealed batch at offset 5 of partition 1")
				}
				v = append([]byte{}, v...)
				i := len(v) - 10
				if at == "header" {
					i = 12
				}
				v[i] ^= 0x40
				return zb.Put(k, v)
			})
			bdb.Close()
			if err != nil {
				t.Fatal(err)
			}
			db, err = broker.Open(path, broker.Options{Compress: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			msgs, err := db.Read(ctx, "t", 1, 0, 0)
			if !errors.Is(err, broker.ErrCorruptBatch) || msgs != nil {
				t.Fatalf("read of a damaged batch: %d records, %v; want none and ErrCorruptBatch", len(msgs), err)
			}
			for _, want := range []string{path, "t/1", "offsets 5.."} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not name %q", err, want)
				}
			}
			if msgs, err := db.Read(ctx, "t", 1, 0, 5); err != nil || len(msgs) != 5 {
				t.Fatalf("the batch before the damaged one: %d records, %v", len(msgs), err)
			}
			if msgs, err := db.Read(ctx, "t", 0, 0, 0); err != nil || len(msgs) != 20 {
				t.Fatalf("partition 0: %d records, %v", len(msgs), err)
			}
		})
	}
}

// TestCrashAppendCompressed is TestCrashAppend with compression on and
// small batches (8 KiB, so that every few commits seal one and the others
// go into the open tail): random kills, a kill inside a commit that sealed
// a batch (broker.in-seal) and one inside a commit that wrote a tail frame
// (broker.in-tail), each of which must lose that commit's batch and
// nothing else.
func TestCrashAppendCompressed(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	env := []string{"compress", "1"}
	for k := 0; k < 3; k++ {
		run := runChild(t, dir, env, 20+rng.Intn(200), rng)
		if len(run.acked) == 0 {
			t.Fatalf("kill %d: inconclusive: the child was killed before any Append returned", k)
		}
		stored, _ := checkLog(t, dir)
		for _, b := range run.acked {
			if !stored[b] {
				t.Fatalf("kill %d: batch %d was acknowledged but is not stored", k, b)
			}
		}
	}
	for _, hook := range []string{"broker.in-seal", "broker.in-tail"} {
		before, _ := checkLog(t, dir)
		run := runChild(t, dir, append(env, "hook", hook, "skip", "3"), 0, rng)
		if !strings.Contains(run.stderr, fault.Marker(hook)) {
			t.Fatalf("inconclusive: hook %s did not fire (stderr %q)", hook, run.stderr)
		}
		after, _ := checkLog(t, dir)
		for _, b := range run.acked {
			if !after[b] {
				t.Fatalf("killed at %s: batch %d was acknowledged but is not stored", hook, b)
			}
		}
		if extra := len(after) - len(before) - len(run.acked); extra != 0 {
			t.Fatalf("killed at %s: %d unacknowledged batches stored, want 0", hook, extra)
		}
	}
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	offs, err := db.Offsets(context.Background(), crashTopic)
	if err != nil {
		t.Fatal(err)
	}
	var held, stored int64
	for _, o := range offs {
		held, stored = held+o.Bytes, stored+o.Stored
	}
	if stored*2 > held {
		t.Fatalf("inconclusive: %d bytes stored for %d held: the records were not compressed", stored, held)
	}
}
