package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
	"lakehouse/internal/fault"
)

// backlogValue is record i of Append a, padded to size bytes with random
// bytes (which compression cannot shrink, so the backlog takes on the
// broker what its records hold); aborted ones start with "A".
func backlogValue(a, i, size int, aborted bool) []byte {
	tag := "C"
	if aborted {
		tag = "A"
	}
	head := fmt.Sprintf("%s a=%d i=%d ", tag, a, i)
	var seed [32]byte
	copy(seed[:], head)
	pad := make([]byte, size-len(head))
	rand.NewChaCha8(seed).Read(pad)
	return append([]byte(head), pad...)
}

// TestReadCommittedBacklog writes a backlog several times the fetch limit
// (4 MiB a partition) with an aborted transaction after every committed
// one, then reads it from offset 0 and from offsets spread over it: every
// Read returns exactly the records whose Append committed, which a
// read-committed franz-go consumer sees too, and never one of an aborted
// transaction.
func TestReadCommittedBacklog(t *testing.T) {
	c := newCluster(t)
	l := open(t, c, kafka.Config{})
	ctx := ctxT(t)
	if err := l.CreateTopic(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	const (
		recBytes  = 16 << 10
		perAppend = 8
		appends   = 121 // 15 MiB, 60 of the Appends aborted, the last committed
	)
	boom := errors.New("boom")
	want := map[int64]bool{}
	var last int64
	for a := 0; a < appends; a++ {
		abort := a%2 == 1
		b := broker.Batch{}
		for i := 0; i < perAppend; i++ {
			b.Records = append(b.Records, broker.Record{Topic: "t", Partition: 0, Value: backlogValue(a, i, recBytes, abort)})
		}
		if abort {
			fault.ArmErr("kafka.before-commit", func() error { return boom })
		}
		pos, err := l.Append(ctx, b)
		fault.Disarm()
		if abort != errors.Is(err, boom) || !abort && err != nil {
			t.Fatalf("append %d (abort %v): %v", a, abort, err)
		}
		for _, p := range pos {
			want[p.Offset] = true
			last = p.Offset
		}
	}
	offs, err := l.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if held := int64(len(want)); offs[0].Stored < 3*kafka.FetchBytes || offs[0].End-held < appends/2*perAppend {
		t.Fatalf("inconclusive: %d bytes on the broker (fetch limit %d), %d offsets for %d committed records: the backlog is not several fetches long or holds no aborted transactions",
			offs[0].Stored, kafka.FetchBytes, offs[0].End, held)
	}
	consumer := committedOffsets(t, ctx, c, "t", last)
	if fmt.Sprint(consumer) != fmt.Sprint(want) {
		t.Fatalf("the read-committed consumer saw %d records, the committed Appends hold %d", len(consumer), len(want))
	}
	r := open(t, c, kafka.Config{ReadOnly: true})
	for _, from := range []int64{0, 1, 100, 333} {
		msgs, err := r.Read(ctx, "t", 0, from, 0)
		if err != nil {
			t.Fatal(err)
		}
		var bad []int64
		for _, m := range msgs {
			if m.Value[0] == 'A' || !want[m.Offset] {
				bad = append(bad, m.Offset)
			}
		}
		n := 0
		for o := range want {
			if o >= from {
				n++
			}
		}
		if len(bad) > 0 || len(msgs) != n {
			t.Errorf("Read from %d: %d records (committed %d), %d of them aborted: %v", from, len(msgs), n, len(bad), bad[:min(len(bad), 10)])
		}
	}
}

// committedOffsets reads topic's partition 0 from the start with a
// read-committed franz-go consumer up to offset last and returns the
// offsets it sees.
func committedOffsets(t *testing.T, ctx context.Context, c interface{ ListenAddrs() []string }, topic string, last int64) map[int64]bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[int64]bool{}
	for !out[last] {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("read-committed consumer: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { out[r.Offset] = true })
	}
	return out
}
