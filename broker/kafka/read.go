package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"lakehouse/broker"
)

// cursor caches, per partition, what the last fetch returned beyond what
// its Read asked for, so that a reader going forward (Read from the next
// offset, again and again) usually costs one fetch per FetchBytes, not
// one per call. Data below the last stable offset never changes, except
// that retention may delete it: a cached record may be returned after
// retention removed it, as if it had been read a moment earlier. Only
// reading forward hits the cache: a Read from below what it holds fetches
// again. Deleting and recreating a topic under a running Log is not
// supported (its cache and metadata would describe the old topic).
type cursor struct {
	mu   sync.Mutex
	from int64            // every readable record in [from, next)...
	next int64            // ... is in msgs, in offset order
	msgs []broker.Message // aliasing the fetch response
	txn  txnOutcome       // the last transaction whose marker lookAhead found
}

func (l *Log) cursor(topic string, p int32) *cursor {
	l.cursorsMu.Lock()
	defer l.cursorsMu.Unlock()
	key := topicPartition{topic, p}
	c := l.cursors[key]
	if c == nil {
		c = &cursor{}
		l.cursors[key] = c
	}
	return c
}

// Read implements broker.Log, with sparse offsets: it returns the records
// with offset >= from, in offset order, at most max of them (max <= 0:
// up to End), never a transaction marker nor an aborted record: a
// transactional record is returned only once its transaction's commit
// marker was read (markers.go). When from holds no record it returns the
// next records that exist; it returns none only when no committed record
// exists in from..End-1, having fetched past markers and aborted batches
// up to End. Errors: broker.ErrUnknownTopic, broker.ErrBadPartition,
// broker.ErrOffsetTrimmed when from < Start, broker.ErrOffsetOutOfRange
// when from > End, and an error naming the record when the broker's list
// of aborted transactions contradicts a marker.
//
// The messages' Key, Value and header values share memory with the fetch
// response they came from; do not modify them.
func (l *Log) Read(ctx context.Context, topic string, partition int, from int64, max int) ([]broker.Message, error) {
	if err := l.checkOpen(); err != nil {
		return nil, err
	}
	tm, err := l.topic(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if partition < 0 || partition >= tm.n {
		return nil, fmt.Errorf("read %s/%d (%d partitions): %w", topic, partition, tm.n, broker.ErrBadPartition)
	}
	return l.read(ctx, topic, int32(partition), from, max)
}

// read is Read for any topic, the meta topic included.
func (l *Log) read(ctx context.Context, topic string, p int32, from int64, max int) ([]broker.Message, error) {
	c := l.cursor(topic, p)
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []broker.Message
	pos := from
	end := int64(-1) // the End a fetch of this call saw
	stalls := 0
	for max <= 0 || len(out) < max {
		if c.from <= pos && pos < c.next {
			i := sort.Search(len(c.msgs), func(i int) bool { return c.msgs[i].Offset >= pos })
			n := len(c.msgs) - i
			if max > 0 {
				n = min(n, max-len(out))
			}
			out = append(out, c.msgs[i:i+n]...)
			if i+n < len(c.msgs) { // max reached; the rest stays cached
				c.msgs = c.msgs[i+n:]
				c.from = c.msgs[0].Offset
				break
			}
			pos = c.next
			c.msgs, c.from = nil, c.next
			continue
		}
		if end >= 0 && pos >= end {
			break
		}
		f, err := l.fetch(ctx, topic, p, pos, &c.txn)
		if err == nil && pos == from && pos > f.end {
			err = fmt.Errorf("read %s/%d at %d (end %d): %w", topic, p, pos, f.end, broker.ErrOffsetOutOfRange)
		}
		if errors.Is(err, kerr.OffsetOutOfRange) {
			err = l.outOfRange(ctx, topic, p, pos, err)
		}
		if err != nil {
			if len(out) > 0 && ctx.Err() == nil {
				return out, nil // the next Read will meet the error
			}
			return nil, err
		}
		end = f.end
		if f.next <= pos {
			if pos >= end {
				break
			}
			if stalls++; stalls == fetchAttempts {
				return nil, fmt.Errorf("read %s/%d at %d (end %d): fetch returns nothing", topic, p, pos, end)
			}
			continue
		}
		stalls = 0
		c.from, c.next, c.msgs = pos, f.next, c.msgs[:0]
		for _, r := range f.recs {
			if r.Offset >= pos {
				c.msgs = append(c.msgs, message(r))
			}
		}
	}
	return out, nil
}

// outOfRange tells whether offset from of topic/p is below Start or beyond
// End, after a fetch answered OFFSET_OUT_OF_RANGE.
func (l *Log) outOfRange(ctx context.Context, topic string, p int32, from int64, ferr error) error {
	want := map[string][]int32{topic: {p}}
	starts, err := l.listOffsets(ctx, want, -2)
	if err != nil {
		return fmt.Errorf("read %s/%d at %d: %w (%w)", topic, p, from, ferr, err)
	}
	ends, err := l.listOffsets(ctx, want, -1)
	if err != nil {
		return fmt.Errorf("read %s/%d at %d: %w (%w)", topic, p, from, ferr, err)
	}
	key := topicPartition{topic, p}
	switch {
	case from < starts[key]:
		return fmt.Errorf("read %s/%d at %d (start %d): %w", topic, p, from, starts[key], broker.ErrOffsetTrimmed)
	case from > ends[key]:
		return fmt.Errorf("read %s/%d at %d (end %d): %w", topic, p, from, ends[key], broker.ErrOffsetOutOfRange)
	}
	return fmt.Errorf("read %s/%d at %d: %w", topic, p, from, ferr)
}

func message(r *kgo.Record) broker.Message {
	m := broker.Message{Topic: r.Topic, Partition: int(r.Partition), Offset: r.Offset,
		Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	if len(r.Headers) > 0 {
		m.Headers = make([]broker.Header, len(r.Headers))
		for i, h := range r.Headers {
			m.Headers[i] = broker.Header{Key: h.Key, Value: h.Value}
		}
	}
	return m
}
