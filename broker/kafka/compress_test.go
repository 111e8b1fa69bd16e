package kafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
	"lakehouse/ingest/replay"
	"lakehouse/internal/fault"
)

// batchCodecs reads topic from its start with a read_uncommitted franz-go
// consumer up to each partition's end and counts the record batches (data
// and control) by the compression type each carries as fetched from the
// broker (0 none, 4 zstd), and the control records (transaction markers,
// one a control batch, never compressed).
func batchCodecs(t *testing.T, ctx context.Context, c *kfake.Cluster, topic string) (codecs map[uint8]int, controls int) {
	t.Helper()
	hook := &codecHook{seen: map[uint8]int{}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords(), kgo.WithHooks(hook))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends := map[int32]int64{}
	l := open(t, c, kafka.Config{ReadOnly: true})
	offs, err := l.Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs {
		if o.End > 0 {
			ends[int32(o.Partition)] = o.End
		}
	}
	for len(ends) > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consumer: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Attrs.IsControl() {
				controls++
			}
			if end, ok := ends[r.Partition]; ok && r.Offset >= end-1 {
				delete(ends, r.Partition)
			}
		})
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	return hook.seen, controls
}

type codecHook struct {
	mu   sync.Mutex
	seen map[uint8]int
}

func (h *codecHook) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	h.mu.Lock()
	h.seen[m.CompressionType]++
	h.mu.Unlock()
}

// TestCompressedRoundTrip: records appended through the zstd producer (the
// default) come back byte for byte, keys, headers and timestamps
// included, on every partition; an aborted transaction's records and Meta
// stay invisible, committed Meta is read back by a new Log; and the
// batches on the broker are zstd (compression type 4), where a Log opened
// with CompressionNone leaves them uncompressed (type 0) — inconclusive
// unless the consumer saw the batches' codecs.
func TestCompressedRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		compression string
		codec       uint8
	}{{"", 4}, {kafka.CompressionNone, 0}} {
		t.Run("compression="+tc.compression, func(t *testing.T) {
			c := newCluster(t)
			l := open(t, c, kafka.Config{Compression: tc.compression})
			ctx := ctxT(t)
			if err := l.CreateTopic(ctx, "t", 2); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			ts := time.UnixMilli(1_700_000_000_123)
			mk := func(a, i int) broker.Record {
				r := broker.Record{Topic: "t", Partition: broker.AnyPartition, Timestamp: ts.Add(time.Duration(i) * time.Millisecond)}
				switch i % 4 {
				case 0: // JSON-like, compressible
					r.Key = []byte(fmt.Sprintf("id-%d-%d", a, i))
					r.Value = []byte(fmt.Sprintf(`{"append":%d,"i":%d,"title":"Page %d","comment":"%s"}`, a, i, i, bytes.Repeat([]byte("edit "), i%50)))
				case 1: // random bytes, incompressible
					r.Key = []byte{byte(i), 0, 0xff}
					r.Value = make([]byte, 100+rng.IntN(4000))
					for j := range r.Value {
						r.Value[j] = byte(rng.Uint32())
					}
				case 2: // no key, empty value, headers as the DLQ's records carry
					r.Partition = 1
					r.Value = []byte{}
					r.Headers = []broker.Header{{Key: "reason", Value: []byte("bad: ☃")}, {Key: "source_id", Value: []byte{}}, {Key: "reason", Value: []byte("twice")}}
				case 3: // binary key, zeros
					r.Key = []byte{0, 1, 2, 3}
					r.Value = make([]byte, 10_000)
				}
				return r
			}
			var want []broker.Record
			boom := errors.New("boom")
			for a := 0; a < 6; a++ {
				b := broker.Batch{Meta: []broker.Meta{{Key: "position", Value: []byte(fmt.Sprintf("pos-%d", a))}}}
				for i := 0; i < 40; i++ {
					b.Records = append(b.Records, mk(a, i))
				}
				abort := a%3 == 1
				if abort {
					fault.ArmErr("kafka.before-commit", func() error { return boom })
				}
				_, err := l.Append(ctx, b)
				fault.Disarm()
				if abort != errors.Is(err, boom) || !abort && err != nil {
					t.Fatalf("append %d (abort %v): %v", a, abort, err)
				}
				if !abort {
					want = append(want, b.Records...)
				}
			}
			// A new Log reads what the appending one wrote.
			r := open(t, c, kafka.Config{ReadOnly: true})
			if v, err := r.Meta(ctx, "position"); err != nil || string(v) != "pos-5" {
				t.Fatalf("Meta: %q, %v; want pos-5 (the last committed)", v, err)
			}
			got := map[int][]broker.Message{}
			for p := 0; p < 2; p++ {
				msgs, err := r.Read(ctx, "t", p, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				got[p] = msgs
			}
			next := map[int]int{}
			for i, w := range want {
				p := w.Partition
				if p == broker.AnyPartition {
					p = broker.PartitionFor(w.Key, 2)
					if len(w.Key) == 0 {
						t.Fatalf("record %d: keyless AnyPartition in the test", i)
					}
				}
				if next[p] >= len(got[p]) {
					t.Fatalf("partition %d: %d records read, want more (record %d of %d committed)", p, len(got[p]), i, len(want))
				}
				m := got[p][next[p]]
				next[p]++
				if !bytes.Equal(m.Key, w.Key) || !bytes.Equal(m.Value, w.Value) || !m.Timestamp.Equal(w.Timestamp) || fmt.Sprint(m.Headers) != fmt.Sprint(w.Headers) {
					t.Fatalf("partition %d offset %d: got key %x, %d value bytes, ts %v, headers %v; want key %x, %d value bytes, ts %v, headers %v",
						p, m.Offset, m.Key, len(m.Value), m.Timestamp, m.Headers, w.Key, len(w.Value), w.Timestamp, w.Headers)
				}
			}
			for p, msgs := range got {
				if next[p] != len(msgs) {
					t.Fatalf("partition %d: %d records read, %d committed", p, len(msgs), next[p])
				}
			}
			codecs, controls := batchCodecs(t, ctx, c, "t")
			all := 0
			for _, n := range codecs {
				all += n
			}
			// Six Appends over two partitions: 12 markers, and a data
			// batch at least for each.
			if controls != 12 || all < 2*controls {
				t.Fatalf("inconclusive: the consumer saw %d batches, %d of them markers; want 12 markers and as many data batches at least", all, controls)
			}
			// Data batches, aborted or committed, carry the codec and no
			// other; markers are never compressed. franz-go sends a batch
			// that compression would not shrink as it is (one that holds
			// only random bytes, when the machine is busy and batches are
			// small), so a few data batches may be uncompressed, never
			// most of them.
			data, other := all-controls, 0
			for codec, n := range codecs {
				if codec != 0 && codec != tc.codec {
					other += n
				}
			}
			if other != 0 || codecs[0] < controls || tc.codec != 0 && codecs[tc.codec] < data/2 {
				t.Fatalf("batches by compression type: %v with %d markers; want codec %d on most of the %d data batches and no other", codecs, controls, tc.codec, data)
			}
			t.Logf("batches by compression type (0 none, 4 zstd): %v, %d of them markers", codecs, controls)
		})
	}
}

// TestReplayEventsOnTheBroker measures what 2,000 replay events (the
// demo's, keyed by meta.id over 4 partitions) take on the broker with and
// without the producer's compression, in Appends of a backlog's 1,000
// events and of a live stream's 10, and requires zstd to halve a
// backlog's. The numbers are logged.
func TestReplayEventsOnTheBroker(t *testing.T) {
	const events = 2000
	rec := replay.Generate(1, events)
	var recs []broker.Record
	var kv int64
	for i, ev := range rec.Events {
		var e struct {
			Meta struct {
				ID string `json:"id"`
			} `json:"meta"`
		}
		if err := json.Unmarshal(ev, &e); err != nil || e.Meta.ID == "" {
			t.Fatalf("event %d: no meta.id (%v)", i, err)
		}
		recs = append(recs, broker.Record{Topic: "t", Partition: broker.AnyPartition, Key: []byte(e.Meta.ID), Value: ev, Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i))})
		kv += int64(len(e.Meta.ID) + len(ev))
	}
	stored := map[string]int64{}
	for _, compression := range []string{kafka.CompressionNone, kafka.CompressionZstd} {
		for _, per := range []int{1000, 10} {
			c := newCluster(t, kfake.NumBrokers(1))
			l := open(t, c, kafka.Config{Compression: compression})
			ctx := ctxT(t)
			if err := l.CreateTopic(ctx, "t", 4); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(recs); i += per {
				if _, err := l.Append(ctx, broker.Batch{Records: recs[i:min(i+per, len(recs))]}); err != nil {
					t.Fatal(err)
				}
			}
			offs, err := l.Offsets(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			for _, o := range offs {
				n += o.Stored
			}
			if n <= 0 {
				t.Fatalf("inconclusive: the broker reports no size (%+v)", offs)
			}
			key := fmt.Sprintf("%s/%d", compression, per)
			stored[key] = n
			t.Logf("%s, %d events an Append: %d bytes on the broker, %.0f an event (keys and values: %.0f)", compression, per, n, float64(n)/events, float64(kv)/events)
		}
	}
	if stored["zstd/1000"]*2 > stored["none/1000"] {
		t.Fatalf("zstd: %d bytes on the broker for a backlog, uncompressed %d: want less than half", stored["zstd/1000"], stored["none/1000"])
	}
	if stored["zstd/10"] >= stored["none/10"] {
		t.Fatalf("zstd: %d bytes on the broker in Appends of 10, uncompressed %d: want less", stored["zstd/10"], stored["none/10"])
	}
}
