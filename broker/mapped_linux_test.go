package broker_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"lakehouse/broker"
)

// rssFileBytes is this process's resident file-backed memory (RssFile in
// /proc/self/status): the pages of broker.db's map that reads touched.
func rssFileBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "RssFile:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no RssFile in /proc/self/status (kernel older than 4.5)")
	return 0
}

// fillBroker appends mib MiB of 8 KiB records to topic "t" (1 partition).
func fillBroker(t *testing.T, db *broker.DB, mib int) []byte {
	t.Helper()
	ctx := context.Background()
	if err := db.CreateTopic(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte("0123456789abcdef"), 512) // 8 KiB
	for i := 0; i < mib; i++ {
		recs := make([]broker.Record, 128)
		for j := range recs {
			recs[j] = broker.Record{Topic: "t", Partition: 0, Value: val}
		}
		if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	return val
}

// readAll reads the whole partition in chunks of 256 records and checks
// every value.
func readAll(t *testing.T, db *broker.DB, want []byte) int {
	t.Helper()
	n := 0
	for {
		msgs, err := db.Read(context.Background(), "t", 0, int64(n), 256)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return n
		}
		for _, m := range msgs {
			if !bytes.Equal(m.Value, want) {
				t.Fatalf("offset %d: value changed", m.Offset)
			}
		}
		n += len(msgs)
	}
}

// TestReleaseMapped: reading a backlog makes broker.db's pages resident in
// the process; ReleaseMapped drops them and the data reads back unchanged.
func TestReleaseMapped(t *testing.T) {
	const mib = 48
	db, err := broker.Open(filepath.Join(t.TempDir(), "broker.db"), broker.Options{ReleaseMappedBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	val := fillBroker(t, db, mib)
	before := rssFileBytes(t)
	if n := readAll(t, db, val); n != mib*128 {
		t.Fatalf("read %d records, want %d", n, mib*128)
	}
	read := rssFileBytes(t)
	if grew := read - before; grew < mib<<20/2 {
		t.Fatalf("inconclusive: reading %d MiB made only %d KiB of the map resident", mib, grew>>10)
	}
	if err := db.ReleaseMapped(); err != nil {
		t.Fatal(err)
	}
	after := rssFileBytes(t)
	if left := after - before; left > 4<<20 {
		t.Fatalf("after ReleaseMapped %d KiB of the map still resident (had %d KiB)", left>>10, (read-before)>>10)
	}
	if n := readAll(t, db, val); n != mib*128 {
		t.Fatalf("after release read %d records, want %d", n, mib*128)
	}
}

// growthAfter fills 48 MiB into a broker with the given ReleaseMappedBytes,
// drops the map's resident pages, runs op and returns how much of the map
// op left resident.
func growthAfter(t *testing.T, release int64, op func(db *broker.DB, val []byte)) int64 {
	t.Helper()
	db, err := broker.Open(filepath.Join(t.TempDir(), "broker.db"), broker.Options{ReleaseMappedBytes: release})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	val := fillBroker(t, db, 48)
	if err := db.ReleaseMapped(); err != nil {
		t.Fatal(err)
	}
	before := rssFileBytes(t)
	op(db, val)
	return rssFileBytes(t) - before
}

// readGrowth: what reading the whole 48 MiB partition leaves resident.
func readGrowth(t *testing.T, release int64) int64 {
	return growthAfter(t, release, func(db *broker.DB, val []byte) { readAll(t, db, val) })
}

// TestReadReleasesMapped: with ReleaseMappedBytes set, reading a backlog
// keeps the resident part of the map near that many bytes.
func TestReadReleasesMapped(t *testing.T) {
	const every = 8 << 20
	if never := readGrowth(t, -1); never < 3*every {
		t.Fatalf("inconclusive: without releases reading 48 MiB left only %d KiB resident", never>>10)
	}
	if grew := readGrowth(t, every); grew > 3*every {
		t.Fatalf("reading 48 MiB left %d KiB of the map resident, want at most %d KiB", grew>>10, 3*every>>10)
	}
}

// appendGrowth appends ~120 MiB of 1.2 KB records to 4 partitions and
// returns how much of broker.db's map the commits left resident.
func appendGrowth(t *testing.T, release int64) int64 {
	t.Helper()
	db, err := broker.Open(filepath.Join(t.TempDir(), "broker.db"), broker.Options{ReleaseMappedBytes: release})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.CreateTopic(ctx, "t", 4); err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte("x"), 1200)
	before := rssFileBytes(t)
	for i := 0; i < 100; i++ {
		recs := make([]broker.Record, 1000)
		for j := range recs {
			recs[j] = broker.Record{Topic: "t", Partition: j % 4, Value: val}
		}
		if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	return rssFileBytes(t) - before
}

// TestAppendReleasesMapped: commits read the tree's rightmost pages through
// the map, and copy-on-write moves them on every commit, so appending alone
// made a third of the log resident. With ReleaseMappedBytes the resident
// part stays near that many bytes.
func TestAppendReleasesMapped(t *testing.T) {
	const every = 8 << 20
	if never := appendGrowth(t, -1); never < 3*every {
		t.Fatalf("inconclusive: without releases appending ~120 MiB left only %d KiB resident", never>>10)
	}
	if grew := appendGrowth(t, every); grew > 3*every {
		t.Fatalf("appending ~120 MiB left %d KiB of the map resident, want at most %d KiB", grew>>10, 3*every>>10)
	}
}

// retainGrowth: what trimming every record of the 48 MiB (by size) leaves
// resident.
func retainGrowth(t *testing.T, release int64) int64 {
	return growthAfter(t, release, func(db *broker.DB, _ []byte) {
		n, err := db.Retain(context.Background(), "t", broker.Retention{MaxBytes: 1})
		if err != nil {
			t.Fatal(err)
		}
		if n < 48*128-1 {
			t.Fatalf("retention trimmed %d records, want at least %d", n, 48*128-1)
		}
	})
}

// TestRetainReleasesMapped: retention reads every record it trims through
// the map (to check its age), so a trim of an hour or a day of the log made
// all of it resident. With ReleaseMappedBytes the resident part stays near
// that many bytes.
func TestRetainReleasesMapped(t *testing.T) {
	const every = 8 << 20
	if never := retainGrowth(t, -1); never < 3*every {
		t.Fatalf("inconclusive: without releases trimming 48 MiB left only %d KiB resident", never>>10)
	}
	if grew := retainGrowth(t, every); grew > 3*every {
		t.Fatalf("trimming 48 MiB left %d KiB of the map resident, want at most %d KiB", grew>>10, 3*every>>10)
	}
}

// cacheInLargeFolios writes broker.db back, drops it from the page cache
// and reads it through sequentially, as a copy, a backup or verify does:
// the page cache then holds it in large folios where the kernel builds
// them for such reads.
func cacheInLargeFolios(t *testing.T, db *broker.DB, path string) {
	t.Helper()
	if err := db.ReleaseMapped(); err != nil { // a mapped page is not dropped
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyBuffer(io.Discard, f, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
}

// sparseGrowth fills 64 MiB of 8 KiB records, has the page cache hold the
// file in large folios, then 128 times commits one record of 1.2 KB and
// reads one record 512 KiB further into the log than the previous read (1.2
// MiB of records in all): the few pages each transaction touches are
// spread over the file, as a slow stream's are once its commits reuse free
// pages anywhere. It returns how much of the map they left resident.
func sparseGrowth(t *testing.T, release int64) int64 {
	t.Helper()
	path := filepath.Join(t.TempDir(), "broker.db")
	db, err := broker.Open(path, broker.Options{ReleaseMappedBytes: release})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := fillBroker(t, db, 64)
	cacheInLargeFolios(t, db, path)
	ctx := context.Background()
	val := bytes.Repeat([]byte("x"), 1200)
	before := rssFileBytes(t)
	for i := 0; i < 128; i++ {
		if _, err := db.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "t", Partition: 0, Value: val}}}); err != nil {
			t.Fatal(err)
		}
		msgs, err := db.Read(ctx, "t", 0, int64(i*64), 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 || !bytes.Equal(msgs[0].Value, want) {
			t.Fatalf("offset %d: read %d records, or a changed value", i*64, len(msgs))
		}
	}
	return rssFileBytes(t) - before
}

// TestSparseTouchesReleaseMapped: when the page cache holds broker.db in
// large folios, Linux maps a whole folio (up to 2 MiB) for each page a
// transaction touches, so small commits and reads spread over the file
// mapped megabytes each while counting a few KiB of records, and the map
// was never released. The broker releases once the process's resident
// file pages grew by ReleaseMappedBytes, whatever the records counted.
func TestSparseTouchesReleaseMapped(t *testing.T) {
	const every = 8 << 20
	never := sparseGrowth(t, -1)
	if never < 4*every {
		t.Skipf("inconclusive: without releases the transactions left only %d KiB resident (the page cache holds no large folios of the file here)", never>>10)
	}
	grew := sparseGrowth(t, every)
	if grew > 3*every {
		t.Fatalf("128 small commits and reads left %d KiB of the map resident (%d KiB without releases), want at most %d KiB", grew>>10, never>>10, 3*every>>10)
	}
	t.Logf("resident after 128 small commits and reads: %d KiB (%d KiB without releases)", grew>>10, never>>10)
}
