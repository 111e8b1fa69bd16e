package stream

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// prefetch is the input of the next batch, planned and read while the
// current batch commits. It is only a read: the next batch's offset entry is
// still written after the current commit entry, with exactly this range.
type prefetch struct {
	start, end Offset
	n          int64
	recs       []arrow.RecordBatch
	size       int64
	read       time.Duration
	err        error
	done       chan struct{}
}

// startPrefetch begins reading the batch after the one ending at start. The
// runner prefetches only while draining a backlog (the current batch hit
// the cap), so a live query still plans at its trigger.
func (q *Query) startPrefetch(ctx context.Context, start Offset) {
	q.dropPrefetch()
	pf := &prefetch{start: start, done: make(chan struct{})}
	q.pre = pf
	go func() {
		defer close(pf.done)
		t := time.Now()
		pf.end, pf.n, pf.err = q.src.Plan(ctx, start, q.limit())
		if pf.err != nil || pf.n == 0 {
			return
		}
		pf.recs, pf.size, pf.err = q.src.Read(ctx, start, pf.end)
		pf.read = time.Since(t)
	}()
}

// takePrefetch returns the prefetched input starting at start, or nil.
func (q *Query) takePrefetch(start Offset) *prefetch {
	pf := q.pre
	q.pre = nil
	if pf == nil {
		return nil
	}
	<-pf.done
	if pf.err != nil || pf.n == 0 || pf.start != start {
		release(pf.recs)
		return nil
	}
	return pf
}

// dropPrefetch waits for and discards any prefetch in flight.
func (q *Query) dropPrefetch() {
	for _, pf := range []*prefetch{q.pre, q.ready} {
		if pf != nil {
			<-pf.done
			release(pf.recs)
		}
	}
	q.pre, q.ready = nil, nil
}
