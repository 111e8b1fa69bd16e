package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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
	sizes   []int64 // their key and value bytes
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
			kp.sizes = append(kp.sizes, int64(len(r.Key)+len(r.Value)))
		})
	}
	return out, nil
}

// abortedStats compares a read-uncommitted read with a read-committed one
// of the same topic: the aborted records, and the most record bytes that
// follow a partition's first aborted record (a reader starting there
// needs more than one fetch of kafka.FetchBytes when that is larger).
func abortedStats(all, committed map[int32]*kafkaPartition) (aborted, beyond int64) {
	for p, kp := range all {
		held := map[int64]bool{}
		if c := committed[p]; c != nil {
			for _, o := range c.offsets {
				held[o] = true
			}
		}
		first := -1
		for i, o := range kp.offsets {
			if !held[o] {
				aborted++
				if first < 0 {
					first = i
				}
			}
		}
		if first < 0 {
			continue
		}
		var n int64
		for _, s := range kp.sizes[first:] {
			n += s
		}
		beyond = max(beyond, n)
	}
	return aborted, beyond
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
