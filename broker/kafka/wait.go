package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"lakehouse/broker"
)

// pollMin and pollMax bound how often the Log asks the cluster for the
// End of the partitions someone waits on: every pollMin after a poll that
// answered a waiter (or after a kick), twice as long after each poll that
// answered none, up to pollMax. A process waiting at the real stream's
// rate, or idle, then costs a request a second, not twenty (an idle
// appliance on Kafka used 6.7 % of a core polling every 50 ms, 0.5 % on
// bbolt).
//
// Wait does not use Kafka's long-poll fetch (MaxWait): a broker handles
// the requests of one connection one at a time, and a client has one
// fetch connection per broker, so a long poll on one partition would hold
// up every Read and every other Wait on that broker for up to MaxWait.
// Instead one poller lists the last stable offsets of all waited-on
// partitions in one request per broker while anyone waits, and at once
// after each Append of this Log. A Wait thus returns at most pollMax
// (plus a round trip) after another process's commit, and about a round
// trip after this process's own.
const (
	pollMin = 50 * time.Millisecond
	pollMax = time.Second
)

// waiters is the set of Wait calls in progress and the poller serving them.
type waiters struct {
	mu      sync.Mutex
	set     map[*waiter]struct{}
	polling bool
	kickCh  chan struct{}
}

type waiter struct {
	topic  string
	p      int32
	offset int64
	done   chan error // buffered: the poller never blocks on it
}

func (w *waiters) init() {
	w.set = map[*waiter]struct{}{}
	w.kickCh = make(chan struct{}, 1)
}

// kick makes a running poller poll now.
func (w *waiters) kick() {
	select {
	case w.kickCh <- struct{}{}:
	default:
	}
}

// Wait implements broker.Log: it returns nil once End (the last stable
// offset) of topic/partition is greater than offset, ctx.Err() when ctx
// ends first, broker.ErrClosed when the Log is closed. End can pass offset
// without any new readable record (an aborted transaction's marker), so a
// Read after Wait may return nothing. See pollMin and pollMax for its latency.
func (l *Log) Wait(ctx context.Context, topic string, partition int, offset int64) error {
	if err := l.checkOpen(); err != nil {
		return err
	}
	tm, err := l.topic(ctx, topic)
	if err != nil {
		return fmt.Errorf("wait: %w", l.ctxErr(ctx, err))
	}
	if partition < 0 || partition >= tm.n {
		return fmt.Errorf("wait %s/%d (%d partitions): %w", topic, partition, tm.n, broker.ErrBadPartition)
	}
	w := &waiter{topic: topic, p: int32(partition), offset: offset, done: make(chan error, 1)}
	l.waits.mu.Lock()
	l.waits.set[w] = struct{}{}
	if !l.waits.polling {
		l.waits.polling = true
		go l.poll()
	}
	l.waits.mu.Unlock()
	l.waits.kick()
	defer func() {
		l.waits.mu.Lock()
		delete(l.waits.set, w)
		l.waits.mu.Unlock()
	}()
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-l.bg.Done():
		return broker.ErrClosed
	}
}

// poll answers waiters until there are none left or the Log closes.
func (l *Log) poll() {
	every := pollMin
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-l.bg.Done():
			l.waits.mu.Lock()
			l.waits.polling = false
			l.waits.mu.Unlock()
			return
		case <-t.C:
			every = min(2*every, pollMax)
		case <-l.waits.kickCh:
			every = pollMin
		}
		l.waits.mu.Lock()
		if len(l.waits.set) == 0 {
			l.waits.polling = false
			l.waits.mu.Unlock()
			return
		}
		ws := make([]*waiter, 0, len(l.waits.set))
		want := map[string][]int32{}
		seen := map[topicPartition]bool{}
		for w := range l.waits.set {
			ws = append(ws, w)
			if key := (topicPartition{w.topic, w.p}); !seen[key] {
				seen[key] = true
				want[w.topic] = append(want[w.topic], w.p)
			}
		}
		l.waits.mu.Unlock()
		ends, err := l.listOffsets(l.bg, want, -1)
		if err != nil {
			// A topic deleted under a waiter fails it; anything else
			// (a leader moving, a broken connection) is tried again
			// at the next tick.
			if errors.Is(err, broker.ErrUnknownTopic) {
				l.failWaiters(ws, err)
			}
			resetTimer(t, every)
			continue
		}
		l.waits.mu.Lock()
		for _, w := range ws {
			if ends[topicPartition{w.topic, w.p}] > w.offset {
				delete(l.waits.set, w)
				w.done <- nil
				every = pollMin // input is flowing: look again soon
			}
		}
		l.waits.mu.Unlock()
		resetTimer(t, every)
	}
}

// resetTimer makes t fire d from now.
func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	t.Reset(d) // go1.23+: Reset after Stop never sees a stale fire
}

func (l *Log) failWaiters(ws []*waiter, err error) {
	l.waits.mu.Lock()
	defer l.waits.mu.Unlock()
	for _, w := range ws {
		if _, ok := l.waits.set[w]; ok {
			delete(l.waits.set, w)
			w.done <- fmt.Errorf("wait %s/%d: %w", w.topic, w.p, err)
		}
	}
}
