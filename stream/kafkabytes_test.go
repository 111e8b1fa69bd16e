package stream

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
)

// TestBrokerSourcePlanBytesCompressedKafka: on Kafka, whose producer
// compresses its batches, a byte-capped plan never passes the cap
// (whole records, at least one) and the batches read every record once.
// The partitions' size on the broker, which the Kafka Log reported as
// their bytes while it produced uncompressed batches, fits the cap while
// their records do not: a plan that trusted it ("everything fits") read
// the whole backlog in one batch. Inconclusive unless that is so.
func TestBrokerSourcePlanBytesCompressedKafka(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	ctx := ctxT(t, time.Minute)
	log, err := kafka.Open(ctx, kafka.Config{Seeds: kc.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if err := log.CreateTopic(ctx, testTopic, 2); err != nil {
		t.Fatal(err)
	}
	const records = 2000
	fill(t, log, records, 500)
	var stored, kv int64
	for _, po := range testPartitions(t, log) {
		if po.BytesKnown() {
			t.Errorf("partition %d: Bytes %d on compressed Kafka, want unknown", po.Partition, po.Bytes)
		}
		stored += po.Stored
		if err := eachMessage(ctx, log, po, func(m broker.Message) { kv += int64(len(m.Key) + len(m.Value)) }); err != nil {
			t.Fatal(err)
		}
	}
	capBytes := 2 * stored
	if stored <= 0 || capBytes >= kv {
		t.Fatalf("inconclusive: %d bytes on the broker for %d bytes of keys and values: a cap of %d does not sit between them", stored, kv, capBytes)
	}
	src := NewBrokerSource(log, testTopic, testSchema)
	start, err := src.Earliest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[pair]int{}
	batches := 0
	var sum int64
	for {
		end, n, err := src.Plan(ctx, start, Limit{Units: 10 * records, Bytes: capBytes})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if batches++; batches > 1000 {
			t.Fatal("no end to the batches")
		}
		in, size, err := src.Read(ctx, start, end)
		if err != nil {
			t.Fatal(err)
		}
		rows := countRows(in)
		if size > capBytes && rows > 1 {
			t.Errorf("batch %d: %d records of %d bytes, cap %d", batches, rows, size, capBytes)
		}
		for _, p := range pairsOf(in) {
			seen[p]++
		}
		release(in)
		sum += size
		start = end
	}
	if len(seen) != records || sum != kv {
		t.Errorf("read %d distinct records of %d bytes, want %d of %d", len(seen), sum, records, kv)
	}
	for p, n := range seen {
		if n != 1 {
			t.Errorf("record %v read %d times", p, n)
		}
	}
	t.Logf("%d records, %d bytes of keys and values, %d on the broker; cap %d: %d batches", records, kv, stored, capBytes, batches)
}

// eachMessage calls fn with every record po's range holds.
func eachMessage(ctx context.Context, log broker.Log, po broker.PartitionOffsets, fn func(broker.Message)) error {
	for off := po.Start; off < po.End; {
		msgs, err := log.Read(ctx, testTopic, po.Partition, off, 1000)
		if err != nil || len(msgs) == 0 {
			return err
		}
		for _, m := range msgs {
			fn(m)
		}
		off = msgs[len(msgs)-1].Offset + 1
	}
	return nil
}
