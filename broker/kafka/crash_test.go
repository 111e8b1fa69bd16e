package kafka_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
	"lakehouse/internal/crashtest"
	"lakehouse/internal/fault"
)

// TestMain runs crashChild instead of the tests in the child of
// TestCrashBetweenProduceAndCommit (crashtest role "produce").
func TestMain(m *testing.M) {
	os.Exit(crashtest.Main(m, map[string]crashtest.Role{"produce": crashChild}))
}

const (
	crashTxnID    = "crash-ingest"
	crashTopic    = "t"
	crashBatches  = 3 // committed batches before the in-flight one
	crashPerBatch = 7
	inflightLine  = "INFLIGHT"
)

func crashValue(batch, i int) string { return fmt.Sprintf("b=%d i=%d", batch, i) }

// TestCrashBetweenProduceAndCommit SIGKILLs a process whose Append has
// produced its records and meta but not committed them, then shows that a
// Log opened with the same TransactionalID sees exactly the committed
// batches: the open transaction is aborted, its records and its meta are
// never readable, and appending goes on.
func TestCrashBetweenProduceAndCommit(t *testing.T) {
	c := newCluster(t)
	ctx := ctxT(t)

	child := crashtest.Start(t, "produce", "seeds", strings.Join(c.ListenAddrs(), ","))
	sawInflight := child.WaitFor(inflightLine, 1, 60*time.Second)
	child.Kill(t)
	acked := -1
	for _, l := range child.Lines("ACK ") {
		acked, _ = strconv.Atoi(l)
	}
	if !sawInflight {
		t.Fatalf("inconclusive: the child never reached the point between produce and commit (acked %d)\noutput:\n%s", acked, crashtest.Tail(child.Output(), 40))
	}
	if acked != crashBatches-1 {
		t.Fatalf("child acked batches up to %d, want %d", acked, crashBatches-1)
	}

	// Proof that the in-flight records are in Kafka, held back by the open
	// transaction: the high watermark is past the last stable offset.
	adm := kadm.NewClient(mustClient(t, c))
	hwm, err := adm.ListEndOffsets(ctx, crashTopic)
	if err != nil {
		t.Fatal(err)
	}
	lso, err := adm.ListCommittedOffsets(ctx, crashTopic)
	if err != nil {
		t.Fatal(err)
	}
	held := false
	hwm.Each(func(o kadm.ListedOffset) {
		if l, ok := lso.Lookup(o.Topic, o.Partition); ok && o.Offset > l.Offset {
			held = true
		}
	})
	if !held {
		t.Fatalf("inconclusive: no uncommitted records in Kafka after the kill (end %v, stable end %v)", hwm, lso)
	}

	l := open(t, c, kafka.Config{TransactionalID: crashTxnID})
	if v, err := l.Meta(ctx, "position"); err != nil || string(v) != strconv.Itoa(crashBatches-1) {
		t.Fatalf("Meta(position) after the crash: got %q, %v; want %d", v, err, crashBatches-1)
	}
	want := map[string]bool{}
	for b := 0; b < crashBatches; b++ {
		for i := 0; i < crashPerBatch; i++ {
			want[crashValue(b, i)] = true
		}
	}
	checkRead := func(extra ...string) {
		t.Helper()
		got := map[string]bool{}
		offs, err := l.Offsets(ctx, crashTopic)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range offs {
			msgs, err := l.Read(ctx, crashTopic, o.Partition, o.Start, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				v := string(m.Value)
				if strings.HasPrefix(v, fmt.Sprintf("b=%d ", crashBatches)) {
					t.Fatalf("record %q of the uncommitted batch is readable", v)
				}
				if got[v] {
					t.Fatalf("record %q read twice", v)
				}
				got[v] = true
			}
		}
		for _, v := range extra {
			want[v] = true
		}
		if len(got) != len(want) {
			t.Fatalf("read %d records, want %d", len(got), len(want))
		}
		for v := range want {
			if !got[v] {
				t.Fatalf("committed record %q not readable", v)
			}
		}
	}
	checkRead()
	if _, err := l.Append(ctx, broker.Batch{
		Records: []broker.Record{{Topic: crashTopic, Partition: broker.AnyPartition, Value: []byte("after")}},
		Meta:    []broker.Meta{{Key: "position", Value: []byte("after")}},
	}); err != nil {
		t.Fatalf("Append after the crash: %v", err)
	}
	checkRead("after")
	if v, _ := l.Meta(ctx, "position"); string(v) != "after" {
		t.Fatalf("Meta after a new Append: got %q, want after", v)
	}
}

func mustClient(t *testing.T, c interface{ ListenAddrs() []string }) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// crashChild appends crashBatches committed batches to the cluster at the
// setting seeds, printing "ACK <n>" after each, then an Append that stops
// between produce and commit, prints inflightLine and waits to be killed.
func crashChild(s crashtest.Spec) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := kafka.Open(ctx, kafka.Config{Seeds: strings.Split(s.Get("seeds"), ","), TransactionalID: crashTxnID})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	if err := l.CreateTopic(ctx, crashTopic, 3); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	appendBatch := func(b int) error {
		recs := make([]broker.Record, crashPerBatch)
		for i := range recs {
			recs[i] = broker.Record{Topic: crashTopic, Partition: (b + i) % 3, Value: []byte(crashValue(b, i))}
		}
		_, err := l.Append(ctx, broker.Batch{Records: recs, Meta: []broker.Meta{{Key: "position", Value: []byte(strconv.Itoa(b))}}})
		return err
	}
	for b := 0; b < crashBatches; b++ {
		if err := appendBatch(b); err != nil {
			return fmt.Errorf("append: %w", err)
		}
		fmt.Printf("ACK %d\n", b)
	}
	fault.ArmFunc("kafka.after-produce", 0, func(string) {
		fmt.Println(inflightLine)
		select {} // wait for SIGKILL
	})
	err = appendBatch(crashBatches)
	return fmt.Errorf("the in-flight append returned: %v", err)
}
