package appliance

import (
	"sync/atomic"
	"testing"
	"time"

	"lakehouse/marts"
)

// TestReleaseAfterJob: the heap is handed back after a refresh and a
// compaction (the jobs that read and write whole data files), not after the
// small jobs that run every few seconds, at most once per releaseEvery, and
// a job inside that time still gets its hand-back when the time is up.
func TestReleaseAfterJob(t *testing.T) {
	var n atomic.Int64
	r := newReleaser(func() { n.Add(1) })
	for _, c := range []struct {
		job  string
		want int64
	}{{marts.JobRefresh, 1}, {marts.JobCompact, 1}, {marts.JobExpire, 0}, {marts.JobOrphans, 0}, {marts.JobCheck, 0}} {
		n.Store(0)
		r.last = time.Time{}
		r.afterJob(marts.Run{Job: c.job})
		if got := n.Load(); got != c.want {
			t.Errorf("after a %s run the heap was handed back %d times, want %d", c.job, got, c.want)
		}
	}

	n.Store(0)
	r.last = time.Time{}
	r.afterJob(marts.Run{Job: marts.JobRefresh})
	r.mu.Lock()
	r.last = time.Now().Add(-releaseEvery + 200*time.Millisecond) // the next may come in 200 ms
	r.mu.Unlock()
	r.afterJob(marts.Run{Job: marts.JobCompact})
	r.afterJob(marts.Run{Job: marts.JobCompact})
	if got := n.Load(); got != 1 {
		t.Fatalf("three jobs in a row handed the heap back %d times at once, want 1", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a third would come now
	if got := n.Load(); got != 2 {
		t.Fatalf("the jobs inside releaseEvery got %d hand-backs in all, want 2 (one when the time was up)", got)
	}
}
