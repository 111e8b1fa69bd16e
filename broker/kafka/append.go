package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"lakehouse/broker"
	"lakehouse/internal/fault"
)

// AfterProduceHook names the fault hook between a transaction's produce
// and its commit: a process killed there leaves its transaction open, and
// the next Log opened with its TransactionalID aborts it.
const AfterProduceHook = "kafka.after-produce"

// Fault hooks of Append.
var (
	// hookAfterProduce is the crash point between a transaction's
	// produce and its commit.
	hookAfterProduce = fault.Register(AfterProduceHook,
		"records and meta of an Append produced and acknowledged by Kafka, before EndTransaction commits them")
	// failBeforeCommit is a failure point there: an error armed on it
	// makes Append abort the transaction instead of committing it.
	failBeforeCommit = fault.Register("kafka.before-commit",
		"failure point: an Append aborts its produced transaction instead of committing it")
)

// Append implements broker.Log. It checks the whole batch first, as the
// bbolt Log does: an unknown topic (broker.ErrUnknownTopic), a partition
// out of range (broker.ErrBadPartition), a record above MaxRecordBytes
// (broker.ErrRecordTooLarge) or a bad Meta entry (broker.ErrBadMeta) fails
// the call with nothing sent. Then it runs one Kafka transaction: every
// record to its partition (broker.PartitionFor of the key for
// AnyPartition, round-robin without a key), every Meta entry as a record
// keyed by its key to the meta topic, and a commit. When it returns nil
// the transaction is committed and read_committed readers of this Log see
// it (it waits for the partitions' End to pass the records, a moment on a
// real cluster).
//
// Any failure aborts the transaction and nothing of the batch is ever
// readable, with one exception Kafka cannot rule out: when the commit
// request itself got no answer (a broken connection), the error says so
// and the batch may have been committed. A newer producer with the same
// TransactionalID makes it fail with an error wrapping broker.ErrFenced,
// and every later Append fails the same way. Calls are serialized. A Log
// opened with Config.ReadOnly fails with ErrReadOnly.
func (l *Log) Append(ctx context.Context, b broker.Batch) ([]broker.Position, error) {
	if err := l.checkWritable("append", true); err != nil {
		return nil, err
	}
	parts := make([]int32, len(b.Records))
	for i := range b.Records {
		r := &b.Records[i]
		if n := len(r.Key) + len(r.Value); n > l.cfg.MaxRecordBytes {
			return nil, fmt.Errorf("append record %d to %q (%d bytes, max %d): %w", i, r.Topic, n, l.cfg.MaxRecordBytes, broker.ErrRecordTooLarge)
		}
		n, err := l.partitions(ctx, r.Topic)
		if err != nil {
			return nil, fmt.Errorf("append record %d: %w", i, err)
		}
		p := r.Partition
		switch {
		case p == broker.AnyPartition && len(r.Key) > 0:
			p = broker.PartitionFor(r.Key, n)
		case p == broker.AnyPartition:
			p = int(l.rr.Add(1) % uint64(n))
		case p < 0 || p >= n:
			return nil, fmt.Errorf("append record %d to %s/%d (%d partitions): %w", i, r.Topic, p, n, broker.ErrBadPartition)
		}
		parts[i] = int32(p)
	}
	for i, m := range b.Meta {
		if len(m.Key) == 0 || len(m.Key) > maxMetaKeyBytes || len(m.Value) > maxMetaValueBytes {
			return nil, fmt.Errorf("append meta %d (key %d bytes, value %d bytes; key 1 to %d, value at most %d): %w",
				i, len(m.Key), len(m.Value), maxMetaKeyBytes, maxMetaValueBytes, broker.ErrBadMeta)
		}
	}
	if len(b.Records) == 0 && len(b.Meta) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	recs := make([]*kgo.Record, 0, len(b.Records)+len(b.Meta))
	for i := range b.Records {
		r := &b.Records[i]
		kr := &kgo.Record{Topic: r.Topic, Partition: parts[i], Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
		if len(r.Headers) > 0 {
			kr.Headers = make([]kgo.RecordHeader, len(r.Headers))
			for j, h := range r.Headers {
				kr.Headers[j] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
			}
		}
		recs = append(recs, kr)
	}
	for _, m := range b.Meta {
		v := m.Value
		if v == nil {
			v = []byte{} // a null value is a tombstone that compaction deletes
		}
		recs = append(recs, &kgo.Record{Topic: l.cfg.MetaTopic, Partition: 0, Key: []byte(m.Key), Value: v})
	}

	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed.Load() {
		return nil, broker.ErrClosed
	}
	if l.fenced != nil {
		return nil, fmt.Errorf("append: %w: %w", broker.ErrFenced, l.fenced)
	}
	if err := l.transact(ctx, recs); err != nil {
		return nil, err
	}
	pos := make([]broker.Position, len(b.Records))
	for i := range pos {
		pos[i] = broker.Position{Partition: int(recs[i].Partition), Offset: recs[i].Offset}
	}
	l.awaitVisible(ctx, recs)
	l.waits.kick()
	return pos, nil
}

// transact produces recs in one transaction and commits it, or aborts it
// and returns why. Called with appendMu held.
func (l *Log) transact(ctx context.Context, recs []*kgo.Record) error {
	if err := l.cl.BeginTransaction(); err != nil {
		return l.failed("begin transaction", err)
	}
	if err := l.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return l.abort(ctx, "produce", err)
	}
	fault.Hit(hookAfterProduce)
	if err := fault.Err(failBeforeCommit); err != nil {
		return l.abort(ctx, "commit", err)
	}
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endTimeout)
	defer cancel()
	if err := l.cl.EndTransaction(endCtx, kgo.TryCommit); err != nil {
		if errors.Is(err, kerr.InvalidTxnState) {
			// The coordinator holds no open transaction of ours at our
			// epoch: it was aborted behind us. kfake answers a zombie's
			// commit so when the newer producer's InitProducerID bumped
			// the epoch by one (it takes the commit for a retry of an
			// EndTxn that aborted); Kafka answers PRODUCER_FENCED.
			err = fmt.Errorf("%w: %w", errAbortedBehind, err)
		}
		return l.abort(ctx, "commit", err)
	}
	return nil
}

// abort ends the open transaction by aborting it and returns the error
// that made it necessary, marked as fencing if it was.
func (l *Log) abort(ctx context.Context, op string, cause error) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endTimeout)
	defer cancel()
	err := l.cl.AbortBufferedRecords(actx)
	if err == nil {
		err = l.cl.EndTransaction(actx, kgo.TryAbort)
	}
	if err != nil {
		cause = fmt.Errorf("%w (abort: %w)", cause, err)
	}
	return l.failed(op, cause)
}

// failed wraps err of step op, and on fencing marks the Log fenced for good.
func (l *Log) failed(op string, err error) error {
	if isFenced(err) {
		l.fenced = err
		return fmt.Errorf("append: %s: %w: %w", op, broker.ErrFenced, err)
	}
	return fmt.Errorf("append: %s: %w", op, err)
}

// awaitVisible waits, for a while at most, until the End of every
// partition recs went to has passed them. Kafka answers a commit before
// the brokers have written its markers, and only the markers make the
// records readable to read_committed readers. The batch is committed
// whatever happens here, so a failure is not the caller's.
func (l *Log) awaitVisible(ctx context.Context, recs []*kgo.Record) {
	last := map[topicPartition]int64{}
	want := map[string][]int32{}
	for _, r := range recs {
		key := topicPartition{r.Topic, r.Partition}
		if _, ok := last[key]; !ok {
			want[r.Topic] = append(want[r.Topic], r.Partition)
		}
		last[key] = max(last[key], r.Offset)
	}
	deadline := time.Now().Add(endTimeout)
	for delay := time.Millisecond; time.Now().Before(deadline); delay = min(2*delay, 50*time.Millisecond) {
		ends, err := l.listOffsets(ctx, want, -1)
		if err != nil {
			return
		}
		behind := false
		for key, off := range last {
			if ends[key] <= off {
				behind = true
			}
		}
		if !behind {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}
