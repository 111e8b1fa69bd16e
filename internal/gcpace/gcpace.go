// Package gcpace owns the garbage collector's target (GOGC) of the process:
// nothing else changes it after start. It keeps no state on disk; nothing
// in it survives a restart.
//
// Two rules set the target, re-applied after every collection:
//
//   - A floor. At the real stream's rate the appliance holds 15 to 25 MiB
//     live and allocates about 10 MB a second, most of it per commit
//     (Parquet and Avro writers, manifests, metadata), whatever the number
//     of events. With GOGC=100 the heap may grow only as far as it holds
//     live, so the collector ran about once a second and marked everything
//     live each time: 15 % of the appliance's CPU at 35 events/s. The floor
//     lets the heap grow at least Floor beyond what is live, so a small live
//     heap is collected less often; once live exceeds Floor, GOGC alone
//     decides, so a large heap (a merge, a backlog, the dedup state at a
//     high rate) costs no more memory than before.
//   - Paced phases. A merge allocates about six times its data in
//     short-lived Arrow and Parquet buffers while it holds 15 to 25 MiB
//     live; at GOGC=100 the resident memory then rose by three times what
//     the merge held (table's BenchmarkCompactTierFootprint: +61 MiB beside
//     a 22 MiB heap). While any paced phase runs, GOGC is half the base and
//     the floor is off (+40 MiB).
//
// Without Start, only paced phases change GOGC (halving and restoring the
// value they find), as a library used on its own expects.
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultFloor is the least headroom the heap gets beyond what is live:
// about three seconds of the real stream's allocation, so the collector
// runs every few seconds instead of about once a second, for at most that
// much more heap (the package doc gives the trade).
const DefaultFloor = 32 << 20

// maxPercent bounds the GOGC the floor may set: a nearly empty heap would
// otherwise ask for thousands, and the runtime's least heap goal (4 MiB)
// scales with GOGC (800: 32 MiB, the floor).
const maxPercent = 800

var st struct {
	mu      sync.Mutex
	started bool
	gen     int   // Start's generation (stop ends one; its hook then lapses)
	base    int   // GOGC the rules start from; <= 0: the collector is off
	floor   int64 // 0: no floor
	paced   int   // paced phases running
	prev    int   // without Start: GOGC found by the first paced phase
}

// Start makes the rules above own GOGC: base is the GOGC to apply when the
// floor does not ask for more (negative: the collector stays off and
// nothing is changed); floor is the least headroom in bytes (0: none). It
// sets GOGC at once and again after every collection. Calling Start again
// replaces base and floor.
func Start(base int, floor int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.base, st.floor = base, floor
	if !st.started {
		st.started = true
		st.gen++
		arm(st.gen)
	}
	applyLocked()
}

// stop undoes Start (for tests): the hook lapses at its next run, and
// paced phases still running are forgotten.
func stop() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.started, st.gen = false, st.gen+1
	st.base, st.floor, st.paced, st.prev = 0, 0, 0, 0
}

// arm registers a cleanup that runs after the next collection finds a
// fresh sentinel unreachable: it re-applies the rules and arms again. The
// sentinel is 64 bytes so that it is never a tiny allocation, whose
// cleanups may not run.
func arm(gen int) {
	s := new([64]byte)
	runtime.AddCleanup(s, func(gen int) {
		st.mu.Lock()
		current := st.gen == gen
		if current {
			applyLocked()
		}
		st.mu.Unlock()
		if current {
			arm(gen)
		}
	}, gen)
}

// Pace lowers the target until the returned function is called (see the
// package comment). The returned function may be called more than once; it
// counts once.
func Pace() (restore func()) {
	st.mu.Lock()
	if st.paced == 0 && !st.started {
		st.prev = Current()
	}
	st.paced++
	applyLocked()
	st.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			st.mu.Lock()
			if st.paced > 0 { // 0: stop forgot it
				st.paced--
			}
			applyLocked()
			st.mu.Unlock()
		})
	}
}

// applyLocked sets GOGC from the rules; st.mu is held.
func applyLocked() {
	base := st.base
	if !st.started {
		if st.paced == 0 {
			if st.prev > 0 {
				debug.SetGCPercent(st.prev)
			}
			st.prev = 0
			return
		}
		base = st.prev
	}
	p := Percent(base, st.floor, liveBytes(), st.paced > 0)
	if p > 0 {
		debug.SetGCPercent(p)
	}
}

// Percent is the GOGC the rules give for a base GOGC, a floor, the heap
// live after the last collection and whether a paced phase runs. It
// returns base unchanged when the collector is off (base <= 0).
func Percent(base int, floor, live int64, paced bool) int {
	if base <= 0 {
		return base
	}
	if paced {
		return max(base/2, 10)
	}
	if floor <= 0 || live <= 0 { // no floor, or no collection yet
		return base
	}
	need := int((floor*100 + live - 1) / live)
	return max(base, min(need, maxPercent))
}

// Current is the collector's GOGC (negative: off).
func Current() int {
	v, ok := readMetric("/gc/gogc:percent")
	if !ok {
		return 100 // not reported: the runtime's default
	}
	return int(v)
}

// liveBytes is the heap marked live by the last collection (0 before the
// first one).
func liveBytes() int64 {
	v, _ := readMetric("/gc/heap/live:bytes")
	return int64(v)
}

// readMetric reads one runtime metric of kind uint64 (ok false: not
// reported by this runtime).
func readMetric(name string) (uint64, bool) {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0, false
	}
	return s[0].Value.Uint64(), true
}
