package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"lakehouse/broker"
	"lakehouse/broker/brokertest"
	"lakehouse/broker/kafka"
	"lakehouse/internal/fault"
)

// newCluster starts an in-process Kafka on 127.0.0.1, closed when the
// test ends.
func newCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3)}, opts...)...)
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func open(t testing.TB, c *kfake.Cluster, cfg kafka.Config) *kafka.Log {
	t.Helper()
	cfg.Seeds = c.ListenAddrs()
	l, err := kafka.Open(ctxT(t), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestContract runs the broker.Log contract suite; a dir stands for one
// kfake cluster, which outlives the Logs opened on it.
func TestContract(t *testing.T) {
	var mu sync.Mutex
	clusters := map[string]*kfake.Cluster{}
	brokertest.Run(t, func(t *testing.T, dir string) broker.Log {
		mu.Lock()
		c := clusters[dir]
		if c == nil {
			c = newCluster(t)
			clusters[dir] = c
		}
		mu.Unlock()
		return open(t, c, kafka.Config{})
	})
}

func values(msgs []broker.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Value)
	}
	return out
}

func batch(topic string, tag string, n int, meta string) broker.Batch {
	b := broker.Batch{Meta: []broker.Meta{{Key: "position", Value: []byte(meta)}}}
	for i := 0; i < n; i++ {
		b.Records = append(b.Records, broker.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("%s-%d", tag, i))})
	}
	return b
}

// TestAbortedNeverVisible: a transaction the Log aborts after producing
// (an error armed before the commit) leaves records and meta in the
// Kafka log that no Read and no Meta ever returns; offsets skip them.
func TestAbortedNeverVisible(t *testing.T) {
	c := newCluster(t)
	l := open(t, c, kafka.Config{})
	ctx := ctxT(t)
	if err := l.CreateTopic(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	a, err := l.Append(ctx, batch("t", "a", 3, "A"))
	if err != nil {
		t.Fatal(err)
	}

	boom := errors.New("boom")
	fault.ArmErr("kafka.before-commit", func() error { return boom })
	_, err = l.Append(ctx, batch("t", "b", 4, "B"))
	fault.Disarm()
	if !errors.Is(err, boom) {
		t.Fatalf("Append with a failure before commit: got %v, want boom", err)
	}
	if v, err := l.Meta(ctx, "position"); err != nil || string(v) != "A" {
		t.Fatalf("Meta after the abort: got %q, %v; want A", v, err)
	}
	offs, err := l.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	// a's 3 records and commit marker, b's 4 records and abort marker.
	if offs[0].End != 9 {
		t.Fatalf("End after an aborted transaction: got %d, want 9", offs[0].End)
	}
	if msgs, err := l.Read(ctx, "t", 0, 0, 0); err != nil || fmt.Sprint(values(msgs)) != "[a-0 a-1 a-2]" {
		t.Fatalf("Read after the abort: got %q, %v", values(msgs), err)
	}
	for from := a[2].Offset + 1; from <= offs[0].End; from++ {
		if msgs, err := l.Read(ctx, "t", 0, from, 10); err != nil || len(msgs) != 0 {
			t.Fatalf("Read(from %d) over markers and aborted records: got %q, %v; want none", from, values(msgs), err)
		}
	}

	cpos, err := l.Append(ctx, batch("t", "c", 2, "C"))
	if err != nil {
		t.Fatalf("Append after an abort: %v", err)
	}
	if cpos[0].Offset != 9 {
		t.Fatalf("first offset after the aborted transaction: got %d, want 9", cpos[0].Offset)
	}
	msgs, err := l.Read(ctx, "t", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(values(msgs)); got != "[a-0 a-1 a-2 c-0 c-1]" {
		t.Fatalf("Read: got %s, want a's and c's records only", got)
	}
	if msgs[3].Offset != 9 {
		t.Fatalf("c-0 at offset %d, want 9", msgs[3].Offset)
	}
	// Read from inside the aborted range skips to the next committed record.
	for from := a[2].Offset + 1; from <= 9; from++ {
		if msgs, err := l.Read(ctx, "t", 0, from, 1); err != nil || len(msgs) != 1 || string(msgs[0].Value) != "c-0" {
			t.Fatalf("Read(from %d, max 1): got %q, %v; want c-0", from, values(msgs), err)
		}
	}
	if v, err := l.Meta(ctx, "position"); err != nil || string(v) != "C" {
		t.Fatalf("Meta: got %q, %v; want C", v, err)
	}
	// A fresh Log (no cache) sees the same.
	l2 := open(t, c, kafka.Config{TransactionalID: "reader"})
	if msgs, err := l2.Read(ctx, "t", 0, 3, 0); err != nil || fmt.Sprint(values(msgs)) != "[c-0 c-1]" {
		t.Fatalf("fresh Log Read(from 3): got %q, %v", values(msgs), err)
	}
	if v, err := l2.Meta(ctx, "position"); err != nil || string(v) != "C" {
		t.Fatalf("fresh Log Meta: got %q, %v; want C", v, err)
	}
}

// TestFencing: opening a second Log with the same TransactionalID fences
// the first, whose Appends then fail with ErrFenced and store nothing.
func TestFencing(t *testing.T) {
	c := newCluster(t)
	ctx := ctxT(t)
	old := open(t, c, kafka.Config{TransactionalID: "ingest"})
	if err := old.CreateTopic(ctx, "t", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Append(ctx, batch("t", "old", 2, "1")); err != nil {
		t.Fatal(err)
	}
	cur := open(t, c, kafka.Config{TransactionalID: "ingest"})
	before, err := cur.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		_, err := old.Append(ctx, batch("t", "zombie", 3, "zombie"))
		if !errors.Is(err, broker.ErrFenced) {
			t.Fatalf("Append %d of the fenced Log: got %v, want ErrFenced", i, err)
		}
		if testing.Verbose() {
			t.Logf("fenced Append %d: %v", i, err)
		}
	}
	after, err := cur.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("offsets moved after fenced Appends: %+v, then %+v", before, after)
	}
	if msgs, err := cur.Read(ctx, "t", 0, 0, 0); err != nil || fmt.Sprint(values(msgs)) != "[old-0 old-1]" {
		t.Fatalf("Read: got %q, %v; want the old Log's committed records only", values(msgs), err)
	}
	if v, _ := cur.Meta(ctx, "position"); string(v) != "1" {
		t.Fatalf("Meta: got %q, want 1", v)
	}
	if _, err := cur.Append(ctx, batch("t", "new", 1, "2")); err != nil {
		t.Fatalf("Append of the new Log: %v", err)
	}
	if v, _ := cur.Meta(ctx, "position"); string(v) != "2" {
		t.Fatalf("Meta: got %q, want 2", v)
	}
	// Another identity is not fenced.
	other := open(t, c, kafka.Config{TransactionalID: "other"})
	if _, err := other.Append(ctx, batch("t", "other", 1, "3")); err != nil {
		t.Fatalf("Append with another TransactionalID: %v", err)
	}
	if _, err := cur.Append(ctx, batch("t", "new", 1, "4")); err != nil {
		t.Fatalf("Append of the new Log after another identity: %v", err)
	}
}

// TestFencedMidTransaction: a Log fenced while its transaction is open
// (produced, not yet committed) fails that Append with ErrFenced, stays
// fenced, and none of the transaction's records or meta become visible.
// kfake answers the zombie's commit with INVALID_TXN_STATE rather than
// PRODUCER_FENCED, so this is the path a zombie ingest takes when it
// wakes between produce and commit.
func TestFencedMidTransaction(t *testing.T) {
	c := newCluster(t)
	ctx := ctxT(t)
	old := open(t, c, kafka.Config{TransactionalID: "ingest"})
	if err := old.CreateTopic(ctx, "t", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Append(ctx, batch("t", "old", 2, "1")); err != nil {
		t.Fatal(err)
	}
	var cur *kafka.Log
	hit := false
	fault.ArmFunc(kafka.AfterProduceHook, 0, func(string) {
		hit = true
		cur = open(t, c, kafka.Config{TransactionalID: "ingest"})
	})
	defer fault.Disarm()
	_, err := old.Append(ctx, batch("t", "zombie", 3, "zombie"))
	fault.Disarm()
	if !hit {
		t.Fatal("inconclusive: the Append never reached the point between produce and commit")
	}
	if !errors.Is(err, broker.ErrFenced) {
		t.Fatalf("Append fenced mid-transaction: got %v, want ErrFenced", err)
	}
	if _, err := old.Append(ctx, batch("t", "zombie", 1, "zombie")); !errors.Is(err, broker.ErrFenced) {
		t.Fatalf("next Append of the fenced Log: got %v, want ErrFenced", err)
	}
	if msgs, err := cur.Read(ctx, "t", 0, 0, 0); err != nil || fmt.Sprint(values(msgs)) != "[old-0 old-1]" {
		t.Fatalf("Read: got %q, %v; want the committed records only", values(msgs), err)
	}
	if v, _ := cur.Meta(ctx, "position"); string(v) != "1" {
		t.Fatalf("Meta: got %q, want 1 (the zombie's meta was aborted)", v)
	}
}

// TestTopicsHidesMeta: the meta topic is not a topic of the Log.
func TestTopicsHidesMeta(t *testing.T) {
	c := newCluster(t)
	l := open(t, c, kafka.Config{})
	ctx := ctxT(t)
	if err := l.CreateTopic(ctx, "t", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, batch("t", "x", 5, "m")); err != nil {
		t.Fatal(err)
	}
	topics, err := l.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics) != 1 || topics[0].Name != "t" {
		t.Fatalf("Topics: got %+v, want t only", topics)
	}
	if p := topics[0].Partitions[0]; p.Bytes != broker.UnknownBytes || p.Stored <= 0 {
		t.Fatalf("partition 0: bytes %d, stored %d; want unknown, and the size on the broker", p.Bytes, p.Stored)
	}
	if _, err := l.Offsets(ctx, kafka.DefaultMetaTopic); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("Offsets of the meta topic: got %v, want ErrUnknownTopic", err)
	}
	if _, err := l.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: kafka.DefaultMetaTopic, Partition: 0, Value: []byte("x")}}}); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("Append to the meta topic: got %v, want ErrUnknownTopic", err)
	}
}

// TestWaitClose: Close wakes a Wait with ErrClosed.
func TestWaitClose(t *testing.T) {
	c := newCluster(t)
	l := open(t, c, kafka.Config{})
	ctx := ctxT(t)
	if err := l.CreateTopic(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx, "t", 0, 0) }()
	time.Sleep(100 * time.Millisecond)
	l.Close()
	select {
	case err := <-done:
		if !errors.Is(err, broker.ErrClosed) {
			t.Fatalf("Wait after Close: got %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after Close")
	}
}

// TestWaitSeesOtherProducer: Wait notices a commit of another producer
// (no in-process wake-up), within a few poll intervals.
func TestWaitSeesOtherProducer(t *testing.T) {
	c := newCluster(t)
	reader := open(t, c, kafka.Config{TransactionalID: "reader"})
	writer := open(t, c, kafka.Config{TransactionalID: "writer"})
	ctx := ctxT(t)
	if err := writer.CreateTopic(ctx, "t", 2); err != nil {
		t.Fatal(err)
	}
	done := make(chan time.Time, 1)
	go func() {
		if err := reader.Wait(ctx, "t", 1, 0); err != nil {
			t.Error(err)
		}
		done <- time.Now()
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("Wait returned before any append")
	default:
	}
	if _, err := writer.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "t", Partition: 1, Value: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	committed := time.Now()
	select {
	case at := <-done:
		t.Logf("Wait returned %v after the other producer's Append returned", at.Sub(committed))
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not see another producer's commit")
	}
}

// TestReadOnly: a read-only Log reads what another Log appends, fences
// nobody (even with the same TransactionalID) and refuses to write.
func TestReadOnly(t *testing.T) {
	c := newCluster(t)
	ctx := ctxT(t)
	empty := open(t, c, kafka.Config{ReadOnly: true})
	if v, err := empty.Meta(ctx, "position"); err != nil || v != nil {
		t.Fatalf("Meta on a cluster without the meta topic: got %q, %v; want nil, nil", v, err)
	}
	if topics, err := empty.Topics(ctx); err != nil || len(topics) != 0 {
		t.Fatalf("Topics of an empty cluster: got %+v, %v", topics, err)
	}
	w := open(t, c, kafka.Config{})
	if err := w.CreateTopic(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, batch("t", "a", 2, "1")); err != nil {
		t.Fatal(err)
	}
	r := open(t, c, kafka.Config{ReadOnly: true})
	if _, err := w.Append(ctx, batch("t", "b", 1, "2")); err != nil {
		t.Fatalf("Append after a read-only Open with the same TransactionalID: %v", err)
	}
	if msgs, err := r.Read(ctx, "t", 0, 0, 0); err != nil || fmt.Sprint(values(msgs)) != "[a-0 a-1 b-0]" {
		t.Fatalf("read-only Read: got %q, %v", values(msgs), err)
	}
	if v, err := r.Meta(ctx, "position"); err != nil || string(v) != "2" {
		t.Fatalf("read-only Meta: got %q, %v; want 2", v, err)
	}
	if _, err := r.Append(ctx, batch("t", "c", 1, "3")); !errors.Is(err, kafka.ErrReadOnly) {
		t.Fatalf("read-only Append: got %v, want ErrReadOnly", err)
	}
	if err := r.CreateTopic(ctx, "u", 1); !errors.Is(err, kafka.ErrReadOnly) {
		t.Fatalf("read-only CreateTopic: got %v, want ErrReadOnly", err)
	}
}

// TestNoAppend: a Log for a process that never appends (the stream and
// marts roles) creates topics but registers no producer: the appending
// Log with the default TransactionalID keeps appending after it opens.
func TestNoAppend(t *testing.T) {
	c := newCluster(t)
	ctx := ctxT(t)
	w := open(t, c, kafka.Config{})
	n := open(t, c, kafka.Config{NoAppend: true})
	if err := n.CreateTopic(ctx, "t", 2); err != nil {
		t.Fatalf("CreateTopic without appending: %v", err)
	}
	if _, err := w.Append(ctx, batch("t", "a", 1, "1")); err != nil {
		t.Fatalf("Append after a NoAppend Open with the same TransactionalID: %v", err)
	}
	if msgs, err := n.Read(ctx, "t", 0, 0, 10); err != nil || fmt.Sprint(values(msgs)) != "[a-0]" {
		t.Fatalf("Read: got %q, %v", values(msgs), err)
	}
	if _, err := n.Append(ctx, batch("t", "b", 1, "2")); !errors.Is(err, kafka.ErrReadOnly) {
		t.Fatalf("NoAppend Append: got %v, want ErrReadOnly", err)
	}
}
