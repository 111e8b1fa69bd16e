package stream

import (
	"context"
	"time"

	"lakehouse/internal/transient"
)

// Pause is what a paused query is waiting out: storage that was full or
// unreachable (a transient error, see package transient). The query
// retries with backoff from its durable position, exactly as after a
// restart, so a pause loses and duplicates nothing.
type Pause struct {
	Since    time.Time `json:"since"`    // the first failure of this pause
	Attempts int       `json:"attempts"` // failures so far
	Err      string    `json:"error"`    // the last one
	Next     time.Time `json:"next"`     // when it retries
}

// Paused returns the query's pause, if it is paused.
func (q *Query) Paused() (Pause, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pause == nil {
		return Pause{}, false
	}
	return *q.pause, true
}

// paused records a transient failure and waits its backoff out; false when
// ctx ended first.
func (q *Query) paused(ctx context.Context, err error) bool {
	now := time.Now()
	q.mu.Lock()
	if q.pause == nil {
		q.pause = &Pause{Since: now}
	}
	p := q.pause
	p.Attempts++
	wait := transient.Backoff(p.Attempts)
	p.Err, p.Next = err.Error(), now.Add(wait)
	attempts, since := p.Attempts, p.Since
	q.mu.Unlock()
	q.cfg.Logger.Warn("stream query paused: storage full or unreachable; retrying from its durable position",
		"query", q.cfg.Name, "attempt", attempts, "paused_for", now.Sub(since).Round(time.Second),
		"retry_in", wait.Round(100*time.Millisecond), "err", err)
	return sleep(ctx, wait) == nil
}

// resumed ends a pause once the query has planned or committed again.
func (q *Query) resumed() {
	q.mu.Lock()
	p := q.pause
	q.pause = nil
	q.mu.Unlock()
	if p != nil {
		q.cfg.Logger.Info("stream query resumed", "query", q.cfg.Name, "paused_for", time.Since(p.Since).Round(time.Second),
			"attempts", p.Attempts)
	}
}
