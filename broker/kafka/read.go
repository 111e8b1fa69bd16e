package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"lakehouse/broker"
)

// fetchBytes bounds one fetch of one partition. A Read of more records
// than fit issues several fetches; a batch larger than this still comes
// whole (Kafka always returns the first batch).
const fetchBytes = 4 << 20

// fetchAttempts bounds the retries of a fetch that failed because the
// Log's metadata was stale (a leader moved) or the connection broke.
const fetchAttempts = 8

// cursor caches, per partition, what the last fetch returned beyond what
// its Read asked for, so that a reader going forward (Read from the next
// offset, again and again) usually costs one fetch per fetchBytes, not
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
// up to End), never a transaction marker nor an aborted record. When from
// holds no record it returns the next records that exist; it returns none
// only when no committed record exists in from..End-1, having fetched past
// markers and aborted batches up to End. Errors: broker.ErrUnknownTopic,
// broker.ErrBadPartition, broker.ErrOffsetTrimmed when from < Start,
// broker.ErrOffsetOutOfRange when from > End.
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
		fp, next, err := l.fetch(ctx, topic, p, pos)
		if err == nil && pos == from && pos > fp.LastStableOffset {
			err = fmt.Errorf("read %s/%d at %d (end %d): %w", topic, p, pos, fp.LastStableOffset, broker.ErrOffsetOutOfRange)
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
		end = fp.LastStableOffset
		if next <= pos {
			if pos >= end {
				break
			}
			if stalls++; stalls == fetchAttempts {
				return nil, fmt.Errorf("read %s/%d at %d (end %d): fetch returns nothing", topic, p, pos, end)
			}
			continue
		}
		stalls = 0
		c.from, c.next, c.msgs = pos, next, c.msgs[:0]
		for _, r := range fp.Records {
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

// decompressor decodes compressed batches that other producers wrote.
var decompressor = kgo.DefaultDecompressor()

// fetch fetches topic/p from offset once, read_committed, without waiting,
// from the partition's leader. It returns the decoded records (aborted
// ones and markers dropped) and the offset to fetch next. On an error that
// stale metadata or a broken connection explains it refreshes the
// metadata and tries again.
func (l *Log) fetch(ctx context.Context, topic string, p int32, offset int64) (kgo.FetchPartition, int64, error) {
	var lastErr error
	for attempt := 0; attempt < fetchAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return kgo.FetchPartition{}, 0, ctx.Err()
			case <-time.After(time.Duration(attempt*attempt) * 10 * time.Millisecond):
			}
			if _, err := l.refreshTopic(ctx, topic); err != nil {
				return kgo.FetchPartition{}, 0, err
			}
		}
		tm, err := l.topicOrMeta(ctx, topic)
		if err != nil {
			return kgo.FetchPartition{}, 0, err
		}
		if int(p) >= tm.n {
			return kgo.FetchPartition{}, 0, fmt.Errorf("fetch %s/%d: %w", topic, p, broker.ErrBadPartition)
		}
		leader := tm.leaders[p]
		if leader < 0 {
			lastErr = fmt.Errorf("fetch %s/%d: %w", topic, p, kerr.LeaderNotAvailable)
			continue
		}
		rp, err := l.fetchFrom(ctx, leader, tm, p, offset)
		if err != nil {
			if cerr := l.ctxErr(ctx, nil); cerr != nil {
				return kgo.FetchPartition{}, 0, cerr
			}
			lastErr = fmt.Errorf("fetch %s/%d from broker %d: %w", topic, p, leader, err)
			var ke *kerr.Error
			if errors.As(err, &ke) && !retryFetch(ke) {
				return kgo.FetchPartition{}, 0, lastErr
			}
			continue
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			Offset:         offset,
			IsolationLevel: kgo.ReadCommitted(),
			Topic:          topic,
			Partition:      p,
		}, rp, decompressor, nil)
		if fp.Err != nil {
			return kgo.FetchPartition{}, 0, fmt.Errorf("fetch %s/%d at %d: %w", topic, p, offset, fp.Err)
		}
		return fp, next, nil
	}
	return kgo.FetchPartition{}, 0, lastErr
}

// fetchFrom sends one fetch request to broker leader and returns the
// partition's part of the answer, or its error code as an error.
func (l *Log) fetchFrom(ctx context.Context, leader int32, tm *topicMeta, p int32, offset int64) (*kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = fetchBytes
	req.IsolationLevel = 1
	req.SessionID = 0
	req.SessionEpoch = -1 // no fetch session: every request is whole
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = tm.name
	rt.TopicID = tm.id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = p
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = fetchBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := l.cl.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if part := &resp.Topics[i].Partitions[j]; part.Partition == p {
				if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
					return nil, err
				}
				return part, nil
			}
		}
	}
	return nil, errors.New("no partition in the fetch response")
}

// retryFetch reports whether a fetch that failed with ke may succeed
// after a metadata refresh.
func retryFetch(ke *kerr.Error) bool {
	switch ke {
	case kerr.NotLeaderForPartition, kerr.FencedLeaderEpoch, kerr.UnknownLeaderEpoch,
		kerr.LeaderNotAvailable, kerr.UnknownTopicID, kerr.InconsistentTopicID,
		kerr.ReplicaNotAvailable, kerr.KafkaStorageError, kerr.UnknownTopicOrPartition,
		kerr.NotCoordinator, kerr.UnknownServerError:
		return true
	}
	return ke.Retriable
}
