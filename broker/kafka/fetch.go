package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"lakehouse/broker"
)

// FetchBytes bounds one fetch of one partition. A Read of more records
// than fit issues several fetches; a batch larger than this still comes
// whole (Kafka always returns the first batch). The kill tests need a
// backlog larger than this to read a partition in more than one fetch.
const FetchBytes = 4 << 20

// requestBytes is the limit of a whole fetch request, which asks for one
// partition: high enough that the partition's limit (FetchBytes) is always
// the one that cuts a response. kfake (as of the version go.mod pins)
// leaves the list of aborted transactions out of a response it cuts at the
// request's limit, and it counts toward that limit the batch the
// partition's limit turns away: with both limits equal, as they were,
// every response that stopped short of the partition's end lacked the
// list. A response holds at most max(FetchBytes, one batch) before the
// batch it turns away, and no batch is above the Log's maxBatch on the
// topics it creates. Reads do not depend on that list (markers.go), but
// their cross-check against it does.
func (l *Log) requestBytes() int32 {
	return max(FetchBytes, l.maxBatch) + l.maxBatch
}

// fetchAttempts bounds the retries of a fetch that failed because the
// Log's metadata was stale (a leader moved) or the connection broke.
const fetchAttempts = 8

// decompressor decodes compressed batches that other producers wrote.
var decompressor = kgo.DefaultDecompressor()

// Isolation levels of a fetch request.
const (
	readUncommitted int8 = 0
	readCommitted   int8 = 1
)

// fetched is what one fetch of a Read gives: the committed records at or
// after the offset asked, the offset to fetch next, and the partition's
// last stable offset.
type fetched struct {
	recs []*kgo.Record
	next int64
	end  int64
}

// fetch fetches topic/p from offset once, read_committed, without waiting,
// from the partition's leader, and returns the committed records as their
// transactions' markers tell (see decide), never an aborted record nor a
// marker. known is the cursor's last look-ahead, which fetch may replace.
func (l *Log) fetch(ctx context.Context, topic string, p int32, offset int64, known *txnOutcome) (fetched, error) {
	rp, err := l.fetchPartition(ctx, topic, p, offset, readCommitted)
	if err != nil {
		return fetched{}, err
	}
	return l.judge(ctx, topic, p, offset, rp, known)
}

// judge is fetch's reading of rp, the response to a read_committed fetch
// of topic/p at offset.
func (l *Log) judge(ctx context.Context, topic string, p int32, offset int64, rp *kmsg.FetchResponseTopicPartition, known *txnOutcome) (fetched, error) {
	f := fetched{end: rp.LastStableOffset}
	recs, next, err := decode(topic, p, offset, rp)
	if err != nil {
		return fetched{}, err
	}
	keep, cut := decide(recs, known)
	if cut < len(recs) && recs[cut].Offset == offset {
		// The response starts with a transaction whose marker lies
		// beyond it: find the marker, then judge again.
		first := recs[cut]
		o, marker, err := l.lookAhead(ctx, topic, p, first.ProducerID, next)
		if err != nil {
			return fetched{}, fmt.Errorf("fetch %s/%d at %d: transaction of producer %d: %w", topic, p, offset, first.ProducerID, err)
		}
		*known = txnOutcome{producer: first.ProducerID, first: first.Offset, marker: marker, outcome: o}
		keep, cut = decide(recs, known)
	}
	if cut < len(recs) {
		next = recs[cut].Offset
	}
	if listed := listedAborted(rp.AbortedTransactions, recs[:cut]); len(listed) > 0 {
		for _, r := range keep {
			if listed[r.Offset] {
				return fetched{}, fmt.Errorf("fetch %s/%d at %d: record %d of producer %d: %w", topic, p, offset, r.Offset, r.ProducerID, errContradiction)
			}
		}
	}
	f.recs, f.next = keep, next
	return f, nil
}

// errContradiction: the broker's list of aborted transactions names a
// record that its transaction's commit marker commits.
var errContradiction = errors.New("the fetch response lists it as aborted, but its transaction's marker commits it: the broker contradicts its own log, refusing to guess")

// lookAhead fetches topic/p read_uncommitted from offset on for the first
// commit or abort marker of producer, and returns what it says and its
// offset. A transaction below the last stable offset has its marker below
// the high watermark, so reaching that without one is an error.
func (l *Log) lookAhead(ctx context.Context, topic string, p int32, producer, offset int64) (outcome, int64, error) {
	for pos := offset; ; {
		rp, err := l.fetchPartition(ctx, topic, p, pos, readUncommitted)
		if err != nil {
			return undecided, 0, fmt.Errorf("look for its marker at %d: %w", pos, err)
		}
		recs, next, err := decode(topic, p, pos, rp)
		if err != nil {
			return undecided, 0, fmt.Errorf("look for its marker: %w", err)
		}
		for _, r := range recs {
			if o := markerOf(r); o != undecided && r.ProducerID == producer {
				return o, r.Offset, nil
			}
		}
		if next <= pos {
			return undecided, 0, fmt.Errorf("no marker from %d to %d (high watermark %d)", offset, pos, rp.HighWatermark)
		}
		pos = next
	}
}

// decode returns every record and control record of rp at or after
// offset, aborted or not (decide judges them), and the offset after the
// last one.
func decode(topic string, p int32, offset int64, rp *kmsg.FetchResponseTopicPartition) ([]*kgo.Record, int64, error) {
	fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset:             offset,
		IsolationLevel:     kgo.ReadUncommitted(),
		KeepControlRecords: true,
		Topic:              topic,
		Partition:          p,
	}, rp, decompressor, nil)
	if fp.Err != nil {
		return nil, 0, fmt.Errorf("fetch %s/%d at %d: %w", topic, p, offset, fp.Err)
	}
	return fp.Records, next, nil
}

// fetchPartition fetches topic/p from offset once, with isolation, without
// waiting, from the partition's leader. On an error that stale metadata or
// a broken connection explains it refreshes the metadata and tries again.
func (l *Log) fetchPartition(ctx context.Context, topic string, p int32, offset int64, isolation int8) (*kmsg.FetchResponseTopicPartition, error) {
	var lastErr error
	for attempt := 0; attempt < fetchAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt*attempt) * 10 * time.Millisecond):
			}
			if _, err := l.refreshTopic(ctx, topic); err != nil {
				return nil, err
			}
		}
		tm, err := l.topicOrMeta(ctx, topic)
		if err != nil {
			return nil, err
		}
		if int(p) >= tm.n {
			return nil, fmt.Errorf("fetch %s/%d: %w", topic, p, broker.ErrBadPartition)
		}
		leader := tm.leaders[p]
		if leader < 0 {
			lastErr = fmt.Errorf("fetch %s/%d: %w", topic, p, kerr.LeaderNotAvailable)
			continue
		}
		rp, err := l.fetchFrom(ctx, leader, tm, p, offset, isolation)
		if err != nil {
			if cerr := l.ctxErr(ctx, nil); cerr != nil {
				return nil, cerr
			}
			lastErr = fmt.Errorf("fetch %s/%d from broker %d: %w", topic, p, leader, err)
			var ke *kerr.Error
			if errors.As(err, &ke) && !retryFetch(ke) {
				return nil, lastErr
			}
			continue
		}
		return rp, nil
	}
	return nil, lastErr
}

// fetchFrom sends one fetch request to broker leader and returns the
// partition's part of the answer, or its error code as an error.
func (l *Log) fetchFrom(ctx context.Context, leader int32, tm *topicMeta, p int32, offset int64, isolation int8) (*kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = l.requestBytes()
	req.IsolationLevel = isolation
	req.SessionID = 0
	req.SessionEpoch = -1 // no fetch session: every request is whole
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = tm.name
	rt.TopicID = tm.id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = p
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = FetchBytes
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
