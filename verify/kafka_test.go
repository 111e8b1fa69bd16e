package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
	"lakehouse/internal/fault"
)

// TestStoredAfterCountsBatches: prove's measure of how far aborted records
// lie before a partition's end counts the batches as the broker keeps
// them (compressed by the Log's producer), as a fetch's limits do, not
// the records' key and value bytes: from offset 0 it is the partition's
// size on the broker, from the first aborted record it is less, and less
// than the records' bytes from there.
func TestStoredAfterCountsBatches(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := "kafka://" + strings.Join(c.ListenAddrs(), ",")
	l, err := kafka.Open(ctx, kafka.Config{Seeds: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.CreateTopic(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	var kvAfter int64 // key and value bytes from the first aborted record
	for a := 0; a < 5; a++ {
		var b broker.Batch
		for i := 0; i < 200; i++ {
			v := fmt.Sprintf(`{"append":%d,"i":%d,"comment":"%s"}`, a, i, strings.Repeat("an edit ", 40))
			b.Records = append(b.Records, broker.Record{Topic: "t", Partition: 0, Value: []byte(v)})
			if a >= 2 {
				kvAfter += int64(len(v))
			}
		}
		abort := a == 2
		if abort {
			fault.ArmErr("kafka.before-commit", func() error { return boom })
		}
		_, err := l.Append(ctx, b)
		fault.Disarm()
		if abort != errors.Is(err, boom) || !abort && err != nil {
			t.Fatalf("append %d: %v", a, err)
		}
	}
	all, err := readKafka(ctx, url, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := readKafka(ctx, url, "t", true)
	if err != nil {
		t.Fatal(err)
	}
	aborted, first := abortedStats(all, committed)
	if aborted != 200 || len(first) != 1 {
		t.Fatalf("aborted %d records, first %v; want 200 in partition 0", aborted, first)
	}
	offs, err := l.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := storedAfter(ctx, url, "t", map[int32]int64{0: 0})
	if err != nil {
		t.Fatal(err)
	}
	if whole != offs[0].Stored {
		t.Errorf("batches from offset 0: %d bytes; the broker reports %d", whole, offs[0].Stored)
	}
	after, err := storedAfter(ctx, url, "t", first)
	if err != nil {
		t.Fatal(err)
	}
	if after <= 0 || after >= whole || after >= kvAfter {
		t.Errorf("batches from the first aborted record %d: %d bytes; want some, below the partition's %d and the records' %d", first[0], after, whole, kvAfter)
	}
	t.Logf("from the first aborted record: %d bytes of batches for %d of keys and values; the partition: %d", after, kvAfter, whole)
}
