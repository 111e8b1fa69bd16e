package appliance

import (
	"runtime/debug"
	"sync"
	"time"

	"lakehouse/marts"
)

// releaseEvery is the least time between two hand-backs of the heap: a
// forced collection of a 20 MiB heap costs a few milliseconds, and a test
// that compacts twice a second with a 90 MiB heap must not spend its CPU on
// them.
const releaseEvery = 10 * time.Second

// releaser hands the heap a marts refresh or a compaction used for a moment
// back to the operating system once the job has run. Both read and write
// whole data files (a refresh runs DuckDB beside), so while the job runs
// the heap is several times what streaming holds; a collection that ends
// then sets the next heap goal from it, and the runtime's background
// scavenger gives the pages back slowly, while the next job comes within a
// minute, whose own peak then comes on top of the last one's leftovers.
// Handing the heap back once the job has run keeps the peaks from
// stacking, at no CPU worth measuring: one forced collection per job at
// most (see releaseEvery).
// A job within releaseEvery of the last hand-back gets one hand-back when
// that time is up, so the last of a run of jobs is always handed back.
type releaser struct {
	free func() // debug.FreeOSMemory

	mu      sync.Mutex
	last    time.Time
	pending bool
}

// newReleaser hands back with free (nil: debug.FreeOSMemory).
func newReleaser(free func()) *releaser {
	if free == nil {
		free = debug.FreeOSMemory
	}
	return &releaser{free: free}
}

// afterJob is the marts scheduler's OnRun.
func (r *releaser) afterJob(run marts.Run) {
	switch run.Job {
	case marts.JobRefresh, marts.JobCompact:
	default:
		return
	}
	r.mu.Lock()
	if r.pending {
		r.mu.Unlock()
		return
	}
	wait := releaseEvery - time.Since(r.last)
	if wait > 0 && !r.last.IsZero() {
		r.pending = true
		r.mu.Unlock()
		time.AfterFunc(wait, r.release)
		return
	}
	r.mu.Unlock()
	r.release()
}

func (r *releaser) release() {
	r.mu.Lock()
	r.pending, r.last = false, time.Now()
	free := r.free
	r.mu.Unlock()
	free()
}
