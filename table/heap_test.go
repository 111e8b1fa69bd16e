package table_test

import (
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/table"
)

// TestCommitHeapFlat: commits without any expiry must not keep earlier
// metadata versions alive. The live heap may grow with the snapshots the
// current metadata holds (a few KiB each), never with the square of them:
// caching iceberg-go's built metadata instead of the parsed file held every
// version (255 MiB after 400 commits of one table, against 5 MiB now).
func TestCommitHeapFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("400 commits")
	}
	l := openLake(t, table.Config{Dir: t.TempDir()})
	live := func() float64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc) / (1 << 20)
	}
	var at100 float64
	for id := int64(1); id <= 400; id++ {
		rec := bronzeRecord(0, 120+(id-1)*10, 10)
		mustCommit(t, l, table.Bronze, table.Batch{Query: "bronze", ID: id, Offsets: "{}",
			Records: []arrow.RecordBatch{rec}, Props: map[string]string{"note": "x"}})
		rec.Release()
		if id == 100 {
			at100 = live()
		}
	}
	at400 := live()
	t.Logf("live heap: %.1f MiB after 100 commits, %.1f MiB after 400", at100, at400)
	if at400 > at100+16 {
		t.Errorf("live heap grew from %.1f MiB to %.1f MiB over 300 commits, want at most 16 MiB more", at100, at400)
	}
}
