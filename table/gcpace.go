package table

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// gcPace lowers the garbage collector's target while merges run. A merge
// allocates about six times its data in short-lived Arrow and Parquet
// buffers while it holds 15 to 25 MiB live; at the collector's default
// target (GOGC=100) the heap then grows to twice everything live before
// each collection, so the process's resident memory rose by three times
// what the merge held (BenchmarkCompactTierFootprint: +61 MiB beside a
// 22 MiB heap). Halving GOGC while merges run brings that to +40 MiB, for
// more collections during the merge only.
//
// GOGC is process wide: the first merge to start halves the value it finds
// (a GOGC of 200 set for a backfill becomes 100, not 50) and the last to
// end restores it. Nothing else in the process changes GOGC after start;
// a change made while a merge runs is overwritten when it ends.
var gcPace struct {
	mu      sync.Mutex
	running int
	prev    int
}

// paceGC halves GOGC until the returned function is called (see gcPace).
// With the collector off (GOGC=off) it changes nothing.
func paceGC() (restore func()) {
	gcPace.mu.Lock()
	defer gcPace.mu.Unlock()
	if gcPace.running == 0 {
		gcPace.prev = gogc()
		if gcPace.prev > 0 {
			debug.SetGCPercent(max(gcPace.prev/2, 10))
		}
	}
	gcPace.running++
	var once sync.Once
	return func() {
		once.Do(func() {
			gcPace.mu.Lock()
			defer gcPace.mu.Unlock()
			gcPace.running--
			if gcPace.running == 0 && gcPace.prev > 0 {
				debug.SetGCPercent(gcPace.prev)
			}
		})
	}
}

// gogc is the collector's current GOGC (negative: off).
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100 // not reported: the runtime's default
	}
	return int(s[0].Value.Uint64())
}
