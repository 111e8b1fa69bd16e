package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"lakehouse/broker"
)

// topicMeta is what the Log knows of a topic from the cluster's metadata.
// A value is never changed; a refresh replaces it.
type topicMeta struct {
	name    string
	id      [16]byte
	n       int     // partitions
	leaders []int32 // per partition; -1 unknown
}

type topicPartition struct {
	topic string
	p     int32
}

// metaSegmentBytes rolls the meta topic's segments early: Kafka compacts
// only closed segments.
const metaSegmentBytes = 16 << 20

// CreateTopic implements broker.Log. The topic gets the Log's replication
// factor and a max.message.bytes that fits MaxRecordBytes. An existing
// topic with the same partition count is left as it is; with another count
// it is broker.ErrPartitionCount. The meta topic's name is refused, and
// so is any topic on a Log opened with Config.ReadOnly (ErrReadOnly).
func (l *Log) CreateTopic(ctx context.Context, topic string, partitions int) error {
	if err := l.checkWritable("create topic", false); err != nil {
		return err
	}
	if topic == l.cfg.MetaTopic {
		return fmt.Errorf("create topic %q: the name of the meta topic", topic)
	}
	if partitions < 1 || partitions > math.MaxInt32 {
		return fmt.Errorf("create topic %q: %d partitions: %w", topic, partitions, broker.ErrBadPartition)
	}
	return l.createTopic(ctx, topic, partitions, map[string]*string{
		"max.message.bytes": kadm.StringPtr(strconv.Itoa(int(l.maxBatch))),
	})
}

// createMetaTopic makes sure the meta topic exists with one partition.
func (l *Log) createMetaTopic(ctx context.Context) error {
	return l.createTopic(ctx, l.cfg.MetaTopic, 1, map[string]*string{
		"cleanup.policy":    kadm.StringPtr("compact"),
		"max.message.bytes": kadm.StringPtr(strconv.Itoa(int(l.maxBatch))),
		"segment.bytes":     kadm.StringPtr(strconv.Itoa(metaSegmentBytes)),
	})
}

func (l *Log) createTopic(ctx context.Context, topic string, partitions int, configs map[string]*string) error {
	resp, err := l.adm.CreateTopic(ctx, int32(partitions), l.cfg.ReplicationFactor, configs, topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		// Metadata may take a moment to show a new topic everywhere;
		// what it holds is known, so Append need not wait for it.
		l.topicsMu.Lock()
		if l.topics[topic] == nil {
			leaders := make([]int32, partitions)
			for i := range leaders {
				leaders[i] = -1
			}
			l.topics[topic] = &topicMeta{name: topic, id: resp.ID, n: partitions, leaders: leaders}
		}
		l.topicsMu.Unlock()
		return nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		tm, err := l.refreshTopic(ctx, topic)
		if err != nil {
			return fmt.Errorf("create topic %q: %w", topic, err)
		}
		if tm.n != partitions {
			return fmt.Errorf("create topic %q with %d partitions (it has %d): %w", topic, partitions, tm.n, broker.ErrPartitionCount)
		}
		return nil
	default:
		return fmt.Errorf("create topic %q: %w", topic, l.ctxErr(ctx, err))
	}
}

// topic returns what the Log knows of topic, asking the cluster if it knows
// nothing yet. The meta topic is unknown to callers of the Log.
func (l *Log) topic(ctx context.Context, topic string) (*topicMeta, error) {
	if topic == l.cfg.MetaTopic {
		return nil, fmt.Errorf("topic %q: %w", topic, broker.ErrUnknownTopic)
	}
	return l.topicOrMeta(ctx, topic)
}

func (l *Log) topicOrMeta(ctx context.Context, topic string) (*topicMeta, error) {
	l.topicsMu.Lock()
	tm := l.topics[topic]
	l.topicsMu.Unlock()
	if tm != nil {
		return tm, nil
	}
	return l.refreshTopic(ctx, topic)
}

// refreshTopic asks the cluster for topic's metadata and caches it.
func (l *Log) refreshTopic(ctx context.Context, topic string) (*topicMeta, error) {
	md, err := l.adm.Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata of %q: %w", topic, l.ctxErr(ctx, err))
	}
	td, ok := md.Topics[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("topic %q: %w", topic, broker.ErrUnknownTopic)
	}
	if td.Err != nil {
		return nil, fmt.Errorf("metadata of %q: %w", topic, td.Err)
	}
	return l.cacheTopic(td), nil
}

func (l *Log) cacheTopic(td kadm.TopicDetail) *topicMeta {
	tm := &topicMeta{name: td.Topic, id: td.ID, n: len(td.Partitions), leaders: make([]int32, len(td.Partitions))}
	for i := range tm.leaders {
		tm.leaders[i] = -1
		if pd, ok := td.Partitions[int32(i)]; ok && pd.Err == nil {
			tm.leaders[i] = pd.Leader
		}
	}
	l.topicsMu.Lock()
	l.topics[td.Topic] = tm
	l.topicsMu.Unlock()
	return tm
}

// partitions returns topic's partition count, or ErrUnknownTopic.
func (l *Log) partitions(ctx context.Context, topic string) (int, error) {
	tm, err := l.topic(ctx, topic)
	if err != nil {
		return 0, err
	}
	return tm.n, nil
}

// Topics implements broker.Log. It lists every topic of the cluster but the
// meta topic and Kafka's internal ones, with offsets as Offsets reports
// them.
func (l *Log) Topics(ctx context.Context) ([]broker.TopicInfo, error) {
	if err := l.checkOpen(); err != nil {
		return nil, err
	}
	tds, err := l.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", l.ctxErr(ctx, err))
	}
	var tms []*topicMeta
	for _, td := range tds.Sorted() {
		if td.Topic == l.cfg.MetaTopic || td.Err != nil {
			continue
		}
		tms = append(tms, l.cacheTopic(td))
	}
	offs, err := l.offsets(ctx, tms)
	if err != nil {
		return nil, err
	}
	out := make([]broker.TopicInfo, len(tms))
	for i, tm := range tms {
		out[i] = broker.TopicInfo{Name: tm.name, Partitions: offs[tm.name]}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Offsets implements broker.Log. Start is the partition's log start
// offset; End its last stable offset, the end a read_committed reader
// sees: an open transaction holds it back until it commits or aborts.
//
// Bytes is broker.UnknownBytes: Append compresses its batches
// (Config.Compression), and other producers or a topic's compression.type
// may too, so nothing the brokers report bounds the key and value bytes a
// partition holds; a consumer applying a byte limit looks at the records.
// Stored is the partition's size on its broker as DescribeLogDirs
// reports it (the largest replica's): record batches as stored, with
// their framing and headers, and aborted records and transaction markers
// as well, until retention deletes their segment; 0 when the size cannot
// be had (an old broker, no DESCRIBE on the cluster).
func (l *Log) Offsets(ctx context.Context, topic string) ([]broker.PartitionOffsets, error) {
	if err := l.checkOpen(); err != nil {
		return nil, err
	}
	tm, err := l.topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	offs, err := l.offsets(ctx, []*topicMeta{tm})
	if err != nil {
		return nil, err
	}
	return offs[topic], nil
}

// offsets lists Start, End and Stored of every partition of tms.
func (l *Log) offsets(ctx context.Context, tms []*topicMeta) (map[string][]broker.PartitionOffsets, error) {
	out := make(map[string][]broker.PartitionOffsets, len(tms))
	if len(tms) == 0 {
		return out, nil
	}
	want := map[string][]int32{}
	set := kadm.TopicsSet{}
	for _, tm := range tms {
		ps := make([]int32, tm.n)
		for i := range ps {
			ps[i] = int32(i)
		}
		want[tm.name] = ps
		set.Add(tm.name, ps...)
	}
	starts, err := l.listOffsets(ctx, want, -2)
	if err != nil {
		return nil, err
	}
	ends, err := l.listOffsets(ctx, want, -1)
	if err != nil {
		return nil, err
	}
	sizes := l.sizes(ctx, set)
	for _, tm := range tms {
		ps := make([]broker.PartitionOffsets, tm.n)
		for i := range ps {
			key := topicPartition{tm.name, int32(i)}
			ps[i] = broker.PartitionOffsets{Partition: i, Start: starts[key], End: ends[key],
				Bytes: broker.UnknownBytes, Stored: sizes[key]}
		}
		out[tm.name] = ps
	}
	return out, nil
}

// listOffsets asks the partitions' leaders for one offset each: with
// timestamp -2 the log start offset, with -1 the last stable offset
// (read_committed isolation).
func (l *Log) listOffsets(ctx context.Context, want map[string][]int32, timestamp int64) (map[topicPartition]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = 1
	for t, ps := range want {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = t
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = p
			rp.Timestamp = timestamp
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	out := make(map[topicPartition]int64)
	for _, shard := range l.cl.RequestSharded(ctx, req) {
		if err := shard.Err; err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				err = fmt.Errorf("%w (%w)", broker.ErrUnknownTopic, err)
			}
			return nil, fmt.Errorf("list offsets: %w", l.ctxErr(ctx, err))
		}
		resp := shard.Resp.(*kmsg.ListOffsetsResponse)
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					if errors.Is(err, kerr.UnknownTopicOrPartition) {
						err = broker.ErrUnknownTopic
					}
					return nil, fmt.Errorf("list offsets of %s/%d: %w", rt.Topic, rp.Partition, err)
				}
				out[topicPartition{rt.Topic, rp.Partition}] = rp.Offset
			}
		}
	}
	for t, ps := range want {
		for _, p := range ps {
			if _, ok := out[topicPartition{t, p}]; !ok {
				return nil, fmt.Errorf("list offsets: no answer for %s/%d", t, p)
			}
		}
	}
	return out, nil
}

// sizes returns the size of the partitions of set that the brokers report,
// the largest replica's. Partitions it could not learn are missing.
func (l *Log) sizes(ctx context.Context, set kadm.TopicsSet) map[topicPartition]int64 {
	out := map[topicPartition]int64{}
	dirs, _ := l.adm.DescribeAllLogDirs(ctx, set) // partial answers are used
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			return
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			key := topicPartition{p.Topic, p.Partition}
			if old, ok := out[key]; !ok || p.Size > old {
				out[key] = p.Size
			}
		})
	})
	return out
}
