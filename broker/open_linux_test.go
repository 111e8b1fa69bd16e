package broker_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lakehouse/broker"
	"lakehouse/internal/procmem"
)

// fillLog appends records of 1.3 KB (the stream's size) to topic "t" (4
// partitions), 1000 a commit, until about mib MiB are stored; each value
// starts with its partition and a sequence number.
func fillLog(t *testing.T, db *broker.DB, mib int) int {
	t.Helper()
	ctx := context.Background()
	if err := db.CreateTopic(ctx, "t", 4); err != nil {
		t.Fatal(err)
	}
	n := mib << 20 / 1300
	for i := 0; i < n; i += 1000 {
		recs := make([]broker.Record, 0, 1000)
		for j := i; j < min(n, i+1000); j++ {
			recs = append(recs, broker.Record{Topic: "t", Partition: j % 4, Value: logValue(j), Timestamp: time.Now()})
		}
		if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func logValue(j int) []byte {
	v := bytes.Repeat([]byte{byte(j)}, 1300)
	binary.BigEndian.PutUint64(v, uint64(j))
	return v
}

// opened measures what Open and a first Append of one record do on the
// broker file at path: the bytes read by read calls and the file's pages
// this process then holds resident in its map.
func opened(t *testing.T, path string) (read, resident int64) {
	t.Helper()
	read0, err := procmem.ReadChars()
	if err != nil {
		t.Skipf("no I/O counters: %v", err)
	}
	db, err := broker.Open(path, broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Append(context.Background(), broker.Batch{Records: []broker.Record{{Topic: "t", Partition: 1, Value: logValue(-1)}}}); err != nil {
		t.Fatal(err)
	}
	read1, err := procmem.ReadChars()
	if err != nil {
		t.Fatal(err)
	}
	if resident, err = procmem.MappedResident(path); err != nil {
		t.Skipf("no process mappings: %v", err)
	}
	return read1 - read0, resident
}

// TestOpenAndFirstAppendReadAFewPages: on a broker.db of about 300 MB whose
// front retention trimmed (thousands of free pages), Open and the first
// Append read under 4 MiB and leave under 4 MiB of the file resident.
// Before the freelist was persisted, both were the whole file: a read of
// every page before bbolt mapped it, then bbolt's walk of every page
// through the map to rebuild its freelist. The same counters see a full
// CheckFile read the file and a full read of the log make it resident.
func TestOpenAndFirstAppendReadAFewPages(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "broker.db")
	db, err := broker.Open(path, broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := fillLog(t, db, 280)
	trimmed, err := db.Retain(context.Background(), "t", broker.Retention{MaxAge: time.Nanosecond, Floor: []int64{5000, 5000, 5000, 5000}})
	if err != nil || trimmed != 20_000 {
		t.Fatalf("retention trimmed %d records (%v), want 20000", trimmed, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := broker.CheckFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(s.Pages) * int64(s.PageSize)
	if size < 280<<20 || s.Free < 2000 {
		t.Fatalf("inconclusive: %d bytes in use, %d free pages", size, s.Free)
	}

	read, resident := opened(t, path)
	t.Logf("%d MiB, %d records, %d free pages: Open and the first Append read %d KiB, left %d KiB resident",
		size>>20, n, s.Free, read>>10, resident>>10)
	if read > 4<<20 || resident > 4<<20 {
		t.Errorf("Open and the first Append read %d KiB and left %d KiB of a %d MiB file resident, want both under 4 MiB",
			read>>10, resident>>10, size>>20)
	}

	read0, _ := procmem.ReadChars()
	if _, err := broker.CheckFile(path); err != nil {
		t.Fatal(err)
	}
	if read1, _ := procmem.ReadChars(); read1-read0 < size/2 {
		t.Errorf("CheckFile read %d bytes of %d in use: the read counter misses reads", read1-read0, size)
	}
	db, err = broker.Open(path, broker.Options{ReadOnly: true, ReleaseMappedBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for p := range 4 {
		for off := int64(5000); ; {
			msgs, err := db.Read(context.Background(), "t", p, off, 10_000)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				break
			}
			off += int64(len(msgs))
		}
	}
	if resident, _ := procmem.MappedResident(path); resident < size/2 {
		t.Errorf("reading the whole log left %d of %d bytes resident: the resident counter misses the map", resident, size)
	}
}

// TestOpenPersistsAnUnpersistedFreelist: a broker.db written with bbolt's
// NoFreelistSync (as the broker did before it persisted its freelist)
// opens: the first writable Open reads every page in use (the check before
// bbolt walks them to rebuild its freelist) and bbolt persists the
// freelist, so the next Open and first Append read a few pages; every
// record reads back as written.
func TestOpenPersistsAnUnpersistedFreelist(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "broker.db")
	db, err := broker.Open(path, broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := fillLog(t, db, 24)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// What the broker's earlier versions left: the last commit made
	// with NoFreelistSync (its meta page names no freelist).
	old, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	first, _ := opened(t, path)
	second, resident := opened(t, path)
	t.Logf("%d records: the first Open read %d KiB, the next %d KiB (%d KiB resident)", n, first>>10, second>>10, resident>>10)
	if first < 24<<20*3/4 {
		t.Errorf("inconclusive: the first Open of an unpersisted freelist read only %d KiB", first>>10)
	}
	if second > 1<<20 || resident > 1<<20 {
		t.Errorf("the Open after it read %d KiB and left %d KiB resident, want under 1 MiB: the freelist was not persisted", second>>10, resident>>10)
	}
	db, err = broker.Open(path, broker.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := 0
	for p := range 4 {
		msgs, err := db.Read(context.Background(), "t", p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			if i < n/4 && !bytes.Equal(m.Value, logValue(p+4*i)) {
				t.Fatalf("partition %d offset %d reads back changed", p, i)
			}
		}
		got += len(msgs)
	}
	if got != n+2 { // and the two first appends
		t.Fatalf("%d records read back, want %d", got, n+2)
	}
}
