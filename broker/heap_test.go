package broker_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"lakehouse/broker"
)

// TestAppendHeapFlatWithLog appends about 300 MB of small batches (the
// real stream's shape: 35 records of 1.3 KB per append, four partitions,
// a consumer reading as it goes), with the options the appliance runs
// (Compress) and records that do not compress, so the file grows as much
// as it would uncompressed, and checks that the live heap after the first
// part grows by at most 2 KiB per MiB the file grew. bbolt's free list keeps a
// map entry for every run of pages it reuses until that run is freed
// again: one per page in a log of records stored one by one (about 4 KiB
// of heap per MiB of log with Options{}), one per sealed batch here, and
// retention (by age and by size) bounds the batches a file holds:
// about 2 MiB of heap at the default size bound on a 30 GB file system.
// It is inconclusive (fails too) if the file did not grow as planned.
func TestAppendHeapFlatWithLog(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test appends about 300 MB to a temporary broker.db; run without -short (as go test ./... and .ci/run do)")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "broker.db")
	db, err := broker.Open(path, broker.Options{Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateTopic(ctx, "t", 4); err != nil {
		t.Fatal(err)
	}
	rnd := rand.NewChaCha8([32]byte{1})
	recs := make([]broker.Record, 35)
	next := make([]int64, 4)
	appendN := func(n int) {
		for range n {
			for i := range recs {
				val := make([]byte, 1300)
				_, _ = rnd.Read(val)
				recs[i] = broker.Record{Topic: "t", Partition: broker.AnyPartition, Value: val, Timestamp: time.Now()}
			}
			if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
				t.Fatal(err)
			}
			for p := range next { // a consumer keeping up: read transactions between commits
				msgs, err := db.Read(ctx, "t", p, next[p], 100)
				if err != nil {
					t.Fatal(err)
				}
				next[p] += int64(len(msgs))
			}
		}
	}
	measure := func() (heap uint64, file int64) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return ms.HeapAlloc, st.Size()
	}
	appendN(1000)
	heap0, file0 := measure()
	appendN(5000)
	heap1, file1 := measure()
	t.Logf("broker.db %d -> %d MiB, live heap %d -> %d KiB", file0>>20, file1>>20, heap0>>10, heap1>>10)
	if file1-file0 < 200<<20 {
		t.Fatalf("inconclusive: broker.db grew %d MiB, want at least 200", (file1-file0)>>20)
	}
	// One entry per 8 KiB page is about 4 KiB of heap per MiB of log; one
	// per batch about 0.7, up to twice that just after the map grows.
	if grew, mib := int64(heap1)-int64(heap0), (file1-file0)>>20; grew > 2<<10*mib {
		t.Fatalf("live heap grew %d KiB while the log grew %d MiB (%.1f KiB per MiB, want at most 2): something is kept per page or per record",
			grew>>10, mib, float64(grew)/1024/float64(mib))
	}
}
