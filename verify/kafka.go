package verify

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
)

// A Kafka reader independent of the appliance's (broker/kafka): a
// franz-go consumer, which drops aborted records by the lists of aborted
// transactions the fetch responses carry, where the appliance's Log
// judges them by their markers. Prove compares the two.

// consumerFetchBytes and consumerPartitionBytes are the consumer's fetch
// limits: the request's well above the sum of the partitions' (eight, a
// batch over each), because kfake leaves the list of aborted transactions
// out of a response it cuts at the request's limit, and a consumer would
// then read aborted records as committed.
const (
	consumerFetchBytes     = 64 << 20
	consumerPartitionBytes = 1 << 20
)

// kafkaPartition is what a consumer read of one partition (franz-go
// returns a partition's records in offset order).
type kafkaPartition struct {
	offsets []int64 // data records, in offset order
}

// readKafka reads every data record of topic from the cluster at url with
// a franz-go consumer, read_committed or not, and returns them per
// partition (aborted records included when not committed).
func readKafka(ctx context.Context, url, topic string, committed bool) (map[int32]*kafkaPartition, error) {
	cfg, err := kafka.ParseURL(url)
	if err != nil {
		return nil, err
	}
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso),
		// Markers too, to know when a partition is read to its end.
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(consumerFetchBytes), kgo.FetchMaxPartitionBytes(consumerPartitionBytes)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	list := adm.ListEndOffsets
	if committed {
		list = adm.ListCommittedOffsets
	}
	ends, err := list(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: end offsets of %s: %w", topic, err)
	}
	out := map[int32]*kafkaPartition{}
	left := map[int32]int64{} // partition -> its end, until read there
	ends.Each(func(o kadm.ListedOffset) {
		out[o.Partition] = &kafkaPartition{}
		if o.Err == nil && o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("kafka consumer: end offsets of %s: %w", topic, err)
	}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("kafka consumer: %s: %d partitions not read to their end: %w", topic, len(left), err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("kafka consumer: %s/%d: %w", t, p, err) })
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := left[r.Partition]; ok && r.Offset >= end-1 {
				delete(left, r.Partition)
			}
			if r.Attrs.IsControl() {
				return
			}
			kp := out[r.Partition]
			kp.offsets = append(kp.offsets, r.Offset)
		})
	}
	return out, nil
}

// abortedStats compares a read-uncommitted read with a read-committed one
// of the same topic: the aborted records, and each partition's first
// aborted record's offset.
func abortedStats(all, committed map[int32]*kafkaPartition) (aborted int64, first map[int32]int64) {
	first = map[int32]int64{}
	for p, kp := range all {
		held := map[int64]bool{}
		if c := committed[p]; c != nil {
			for _, o := range c.offsets {
				held[o] = true
			}
		}
		for _, o := range kp.offsets {
			if !held[o] {
				aborted++
				if _, ok := first[p]; !ok {
					first[p] = o
				}
			}
		}
	}
	return aborted, first
}

// storedAfter returns the most bytes of record batches, as the brokers
// keep them (compressed, with their framing), that a partition of topic
// holds from its offset in from to its end: what a reader starting there
// fetches, and what a fetch's limits count. It reads them with raw
// read-uncommitted fetches from the partitions' leaders.
func storedAfter(ctx context.Context, url, topic string, from map[int32]int64) (int64, error) {
	if len(from) == 0 {
		return 0, nil
	}
	cfg, err := kafka.ParseURL(url)
	if err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Seeds...))
	if err != nil {
		return 0, fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("kafka metadata of %s: %w", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return 0, fmt.Errorf("kafka metadata of %s: %v", topic, td.Err)
	}
	var most int64
	for p, off := range from {
		pd, ok := td.Partitions[p]
		if !ok || pd.Err != nil || pd.Leader < 0 {
			return 0, fmt.Errorf("kafka metadata of %s/%d: no leader (%v)", topic, p, pd.Err)
		}
		n, err := batchBytesFrom(ctx, cl.Broker(int(pd.Leader)), td, p, off)
		if err != nil {
			return 0, fmt.Errorf("kafka: batches of %s/%d from %d: %w", topic, p, off, err)
		}
		most = max(most, n)
	}
	return most, nil
}

// batchBytesFrom sums the sizes of the record batches of td/p from the
// one holding offset to the partition's high watermark, fetched from
// leader 1 MiB at a time.
func batchBytesFrom(ctx context.Context, leader *kgo.Broker, td kadm.TopicDetail, p int32, offset int64) (int64, error) {
	var n int64
	for pos := offset; ; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.IsolationLevel, req.SessionEpoch = -1, 2<<20, 0, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = td.Topic, td.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, pos, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := leader.Request(ctx, req)
		if err != nil {
			return 0, err
		}
		resp := kresp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return 0, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return 0, errors.New("no partition in the fetch response")
		}
		part := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
			return 0, err
		}
		start := pos
		for b := part.RecordBatches; len(b) >= 12; {
			size := 12 + int(binary.BigEndian.Uint32(b[8:12])) // base offset, then length
			if size > len(b) {
				break // a batch cut by the response's limit
			}
			var batch kmsg.RecordBatch
			if err := batch.ReadFrom(b[:size]); err != nil {
				return 0, err
			}
			if last := batch.FirstOffset + int64(batch.LastOffsetDelta); last >= pos {
				n += int64(size)
				pos = last + 1
			}
			b = b[size:]
		}
		if pos >= part.HighWatermark {
			return n, nil
		}
		if pos == start {
			return 0, fmt.Errorf("no progress at %d (high watermark %d)", pos, part.HighWatermark)
		}
	}
}

// checkKafkaCommitted is the check "kafka-read-committed": the offsets the
// appliance's Log holds of topic (what `topics` and verify count, and what
// bronze is checked against) are those a read-committed franz-go consumer
// reads, partition by partition.
func checkKafkaCommitted(ctx context.Context, url string, log broker.Log, topics ...string) (Check, error) {
	c := Check{Name: "kafka-read-committed", OK: true}
	var detail []string
	for _, topic := range topics {
		consumer, err := readKafka(ctx, url, topic, true)
		if err != nil {
			return c, err
		}
		offs, err := log.Offsets(ctx, topic)
		if err != nil {
			return c, fmt.Errorf("kafka-read-committed: %w", err)
		}
		var nLog, nConsumer int64
		var diff []string
		for _, po := range offs {
			var held []int64
			if err := broker.EachHeld(ctx, log, topic, po, po.Start, po.End, func(off int64) { held = append(held, off) }); err != nil {
				return c, fmt.Errorf("kafka-read-committed: read %s/%d: %w", topic, po.Partition, err)
			}
			var want []int64
			if kp := consumer[int32(po.Partition)]; kp != nil {
				want = kp.offsets
			}
			nLog += int64(len(held))
			nConsumer += int64(len(want))
			if only, extra := setDiff(want, held); len(only) > 0 || len(extra) > 0 {
				c.OK = false
				diff = append(diff, fmt.Sprintf("%s/%d: the Log lacks %v, holds beyond the consumer %v", topic, po.Partition, only, extra))
			}
		}
		detail = append(detail, fmt.Sprintf("%s: the Log holds %d records, the consumer read %d", topic, nLog, nConsumer))
		detail = append(detail, diff...)
	}
	c.Detail = strings.Join(detail, "; ")
	return c, nil
}

// setDiff returns the first maxListed offsets of sorted a not in sorted b,
// and of b not in a.
func setDiff(a, b []int64) (onlyA, onlyB []int64) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			if len(onlyA) < maxListed {
				onlyA = append(onlyA, a[i])
			}
			i++
		case i == len(a) || b[j] < a[i]:
			if len(onlyB) < maxListed {
				onlyB = append(onlyB, b[j])
			}
			j++
		default:
			i++
			j++
		}
	}
	return onlyA, onlyB
}
