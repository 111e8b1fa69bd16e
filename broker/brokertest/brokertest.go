// Package brokertest is the contract suite for implementations of
// broker.Log. The bbolt implementation runs it in its own tests; a second
// implementation (a Kafka adapter, say) passes the same suite before the
// stream code may use it.
package brokertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"lakehouse/broker"
)

// Opener opens the log stored under dir. Opening the same dir again after
// Close must show everything that was appended.
type Opener func(t *testing.T, dir string) broker.Log

// Run runs the whole contract against the implementation open returns.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"CreateTopic", testCreateTopic},
		{"AppendRead", testAppendRead},
		{"DenseOffsets", testDenseOffsets},
		{"KeyPartitioning", testKeyPartitioning},
		{"Errors", testErrors},
		{"TooLargeAppendsNothing", testTooLarge},
		{"MetaWithRecords", testMeta},
		{"Wait", testWait},
		{"ConcurrentAppenders", testConcurrent},
		{"Reopen", testReopen},
		{"Sizes", testSizes},
		{"SparseGaps", testSparseGaps},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustTopic(t *testing.T, l broker.Log, name string, n int) {
	t.Helper()
	if err := l.CreateTopic(ctxT(t), name, n); err != nil {
		t.Fatalf("CreateTopic(%q, %d): %v", name, n, err)
	}
}

func testCreateTopic(t *testing.T, open Opener) {
	l := open(t, t.TempDir())
	defer l.Close()
	ctx := ctxT(t)
	mustTopic(t, l, "a", 3)
	mustTopic(t, l, "a", 3) // idempotent
	if err := l.CreateTopic(ctx, "a", 4); !errors.Is(err, broker.ErrPartitionCount) {
		t.Fatalf("CreateTopic with another count: got %v, want ErrPartitionCount", err)
	}
	mustTopic(t, l, "b", 1)
	topics, err := l.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics) != 2 || topics[0].Name != "a" || topics[1].Name != "b" || len(topics[0].Partitions) != 3 {
		t.Fatalf("Topics: got %+v, want a(3 partitions), b", topics)
	}
	for _, p := range topics[0].Partitions {
		if p.Start != 0 || p.End != 0 {
			t.Fatalf("new partition %d: got start %d end %d, want 0 0", p.Partition, p.Start, p.End)
		}
	}
}

func testAppendRead(t *testing.T, open Opener) {
	l := open(t, t.TempDir())
	defer l.Close()
	ctx := ctxT(t)
	mustTopic(t, l, "t", 2)
	ts := time.Date(2026, 2, 26, 15, 49, 36, 569_000_000, time.UTC)
	in := []broker.Record{
		{Topic: "t", Partition: 1, Key: []byte("k1"), Value: []byte(`{"a":1}`), Timestamp: ts,
			Headers: []broker.Header{{Key: "h", Value: []byte("v")}, {Key: "empty"}}},
		{Topic: "t", Partition: 1, Value: []byte{0, 1, 2, 255}},
		{Topic: "t", Partition: 1, Value: nil},
	}
	pos, err := l.Append(ctx, broker.Batch{Records: in})
	if err != nil {
		t.Fatal(err)
	}
	sparse := broker.IsSparse(l)
	for i, p := range pos {
		if sparse {
			// Offsets may skip, but only grow.
			if p.Partition != 1 || i > 0 && p.Offset <= pos[i-1].Offset || p.Offset < 0 {
				t.Fatalf("position %d: got %+v, want partition 1, offsets increasing: %+v", i, p, pos)
			}
			continue
		}
		if p.Partition != 1 || p.Offset != int64(i) {
			t.Fatalf("position %d: got %+v, want partition 1 offset %d", i, p, i)
		}
	}
	got, err := l.Read(ctx, "t", 1, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("Read: got %d messages, want %d", len(got), len(in))
	}
	for i, m := range got {
		if m.Offset != pos[i].Offset || m.Partition != 1 || m.Topic != "t" {
			t.Fatalf("message %d: got %s/%d@%d", i, m.Topic, m.Partition, m.Offset)
		}
		if !bytes.Equal(m.Value, in[i].Value) || !bytes.Equal(m.Key, in[i].Key) {
			t.Fatalf("message %d: got key %q value %q, want %q %q", i, m.Key, m.Value, in[i].Key, in[i].Value)
		}
	}
	if !got[0].Timestamp.Equal(ts) {
		t.Fatalf("timestamp: got %v, want %v", got[0].Timestamp, ts)
	}
	if string(got[0].Header("h")) != "v" || len(got[0].Headers) != 2 {
		t.Fatalf("headers: got %+v", got[0].Headers)
	}
	// A bounded read and a read at the end (on a sparse log: past the
	// last record, where only markers may follow).
	if got, err := l.Read(ctx, "t", 1, pos[1].Offset, 1); err != nil || len(got) != 1 || got[0].Offset != pos[1].Offset {
		t.Fatalf("Read(from %d, max 1): got %v, %v", pos[1].Offset, got, err)
	}
	if got, err := l.Read(ctx, "t", 1, pos[2].Offset+1, 10); err != nil || len(got) != 0 {
		t.Fatalf("Read at end: got %d messages, %v; want 0, nil", len(got), err)
	}
	if got, err := l.Read(ctx, "t", 0, 0, 10); err != nil || len(got) != 0 {
		t.Fatalf("Read empty partition: got %d, %v", len(got), err)
	}
}

func testDenseOffsets(t *testing.T, open Opener) {
	l := open(t, t.TempDir())
	defer l.Close()
	ctx := ctxT(t)
	mustTopic(t, l, "t", 3)
	if broker.IsSparse(l) {
		checkSparseOffsets(t, l)
		return
	}
	next := make([]int64, 3)
	appendSpread(t, l, func(b, i int, rec broker.Record, p broker.Position) {
		if p.Partition != rec.Partition || p.Offset != next[p.Partition] {
			t.Fatalf("batch %d record %d: got %+v, want partition %d offset %d", b, i, p, rec.Partition, next[p.Partition])
		}
		next[p.Partition]++
	})
	offs, err := l.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for p, o := range offs {
		if o.Start != 0 || o.End != next[p] {
			t.Fatalf("partition %d: got %d..%d, want 0..%d", p, o.Start, o.End, next[p])
		}
	}
}

// appendSpread appends 20 batches of 1 to 7 records spread over the 3
// partitions of topic "t" and calls check with each record (record i of
// batch b) and the position Append returned for it.
func appendSpread(t *testing.T, l broker.Log, check func(b, i int, rec broker.Record, p broker.Position)) {
	t.Helper()
	ctx := ctxT(t)
	for b := 0; b < 20; b++ {
		var recs []broker.Record
		for i := 0; i <= b%7; i++ {
			recs = append(recs, broker.Record{Topic: "t", Partition: (b + i) % 3, Value: []byte(fmt.Sprint(b, i))})
		}
		pos, err := l.Append(ctx, broker.Batch{Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range pos {
			check(b, i, recs[i], p)
		}
	}
}

// checkSparseOffsets is testDenseOffsets for a sparse Log: offsets
// strictly increase per partition, End passes the last offset returned,
// and reading returns every record appended, in order.
func checkSparseOffsets(t *testing.T, l broker.Log) {
	ctx := ctxT(t)
	var want [3][]string
	last := []int64{-1, -1, -1}
	appendSpread(t, l, func(b, i int, rec broker.Record, p broker.Position) {
		if p.Partition != rec.Partition || p.Offset <= last[p.Partition] {
			t.Fatalf("batch %d record %d: got %+v, want partition %d offset above %d", b, i, p, rec.Partition, last[p.Partition])
		}
		last[p.Partition] = p.Offset
		want[p.Partition] = append(want[p.Partition], string(rec.Value))
	})
	offs, err := l.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for p, o := range offs {
		if o.Start != 0 || o.End <= last[p] {
			t.Fatalf("partition %d: got %d..%d, want 0..(above %d)", p, o.Start, o.End, last[p])
		}
		msgs, err := l.Read(ctx, "t", p, o.Start, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, m := range msgs {
			if i > 0 && m.Offset <= msgs[i-1].Offset {
				t.Fatalf("partition %d: offset %d after %d", p, m.Offset, msgs[i-1].Offset)
			}
			got = append(got, string(m.Value))
		}
		if fmt.Sprint(got) != fmt.Sprint(want[p]) {
			t.Fatalf("partition %d: read %q, want %q", p, got, want[p])
		}
	}
}

func testKeyPartitioning(t *testing.T, open Opener) {
	l := open(t, t.TempDir())
	defer l.Close()
	ctx := ctxT(t)
	mustTopic(t, l, "t", 4)
	first := map[string]int{}
	used := map[int]bool{}
	for round := 0; round < 3; round++ {
		var recs []broker.Record
		for k := 0; k < 40; k++ {
			recs = append(recs, broker.Record{Topic: "t", Partition: broker.AnyPartition, Key: []byte(fmt.Sprintf("key-%d", k)), Value: []byte("v")})
		}
		pos, err := l.Append(ctx, broker.Batch{Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range pos {
			k := string(recs[i].Key)
			if round == 0 {
				first[k] = p.Partition
			} else if first[k] != p.Partition {
				t.Fatalf("key %s: partition %d, earlier %d; want stable", k, p.Partition, first[k])
			}
			used[p.Partition] = true
		}
	}
	if len(used) < 2 {
		t.Fatalf("40 keys went to %d partition(s); want them spread", len(used))
	}
}

func testErrors(t *testing.T, open Opener) {
	l := open(t, t.TempDir())
	defer l.Close()
	ctx := ctxT(t)
	mustTopic(t, l, "t", 2)
	if _, err := l.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "nope", Value: []byte("x")}}}); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("Append to unknown topic: got %v, want ErrUnknownTopic", err)
	}
	if _, err := l.Read(ctx, "nope", 0, 0, 1); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("Read unknown topic: got %v, want ErrUnknownTopic", err)
	}
	if _, err := l.Offsets(ctx, "nope"); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("Offsets unknown topic: got %v, want ErrUnknownTopic", err)
	}
	if _, err := l.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "t", Partition: 2, Value: []byte("x")}}}); !errors.Is(err, broker.ErrBadPartition) {
		t.Fatalf("Append to partition 2 of 2: got %v, want ErrBadPartition", err)
	}
	if _, err := l.Read(ctx, "t", 5, 0, 1); !errors.Is(err, broker.ErrBadPartition) {
		t.Fatalf("Read partition 5: got %v, want ErrBadPartition", err)
	}
	if _, err := l.Read(ctx, "t", 0, 1, 1); !errors.Is(err, broker.ErrOffsetOutOfRange) {
		t.Fatalf("Read beyond end: got %v, want ErrOffsetOutOfRange", err)
	}
}

func testTooLarge(t *testing.T, open Opener) {
	l := open(t, t.TempDir())
	defer l.Close()
	ctx := ctxT(t)
	mustTopic(t, l, "t", 1)
	big := bytes.Repeat([]byte("x"), broker.DefaultMaxRecordBytes+1)
	_, err := l.Append(ctx, broker.Batch{
		Records: []broker.Record{{Topic: "t", Partition: 0, Value: []byte("small")}, {Topic: "t", Partition: 0, Value: big}},
		Meta:    []broker.Meta{{Key: "m", Value: []byte("1")}},
	})
	if !errors.Is(err, broker.ErrRecordTooLarge) {
		t.Fatalf("Append with an oversized record: got %v, want ErrRecordTooLarge", err)
	}
	offs, err := l.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if offs[0].End != 0 {
		t.Fatalf("after a rejected Append: end %d, want 0 (nothing appended)", offs[0].End)
	}
	if m, _ := l.Meta(ctx, "m"); m != nil {
		t.Fatalf("after a rejected Append: meta %q, want none", m)
	}
}

func testMeta(t *testing.T, open Opener) {
	l := open(t, t.TempDir())
	defer l.Close()
	ctx := ctxT(t)
	mustTopic(t, l, "t", 1)
	if v, err := l.Meta(ctx, "src"); err != nil || v != nil {
		t.Fatalf("Meta of unwritten key: got %q, %v; want nil, nil", v, err)
	}
	for i := 1; i <= 3; i++ {
		_, err := l.Append(ctx, broker.Batch{
			Records: []broker.Record{{Topic: "t", Partition: 0, Value: []byte{byte(i)}}},
			Meta:    []broker.Meta{{Key: "src", Value: []byte(fmt.Sprint(i))}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := l.Meta(ctx, "src"); string(v) != "3" {
		t.Fatalf("Meta: got %q, want 3", v)
	}
}

func testWait(t *testing.T, open Opener) {
	l := open(t, t.TempDir())
	defer l.Close()
	ctx := ctxT(t)
	mustTopic(t, l, "t", 2)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := l.Wait(short, "t", 0, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on an empty partition: got %v, want DeadlineExceeded", err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx, "t", 1, 0) }()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before any append", err)
	default:
	}
	// An append to another partition must not satisfy the wait.
	if _, err := l.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "t", Partition: 0, Value: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("Wait on partition 1 returned %v after an append to partition 0", err)
	case <-time.After(20 * time.Millisecond):
	}
	if _, err := l.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "t", Partition: 1, Value: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after an append")
	}
}

func testConcurrent(t *testing.T, open Opener) {
	l := open(t, t.TempDir())
	defer l.Close()
	ctx := ctxT(t)
	mustTopic(t, l, "t", 2)
	const writers, batches, per = 8, 25, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for b := 0; b < batches; b++ {
				recs := make([]broker.Record, per)
				for i := range recs {
					recs[i] = broker.Record{Topic: "t", Partition: w % 2, Value: []byte(fmt.Sprintf("%d/%d/%d", w, b, i))}
				}
				pos, err := l.Append(ctx, broker.Batch{Records: recs})
				if err != nil {
					errs <- err
					return
				}
				for i := 1; i < len(pos); i++ {
					if broker.IsSparse(l) && pos[i].Offset <= pos[i-1].Offset {
						errs <- fmt.Errorf("writer %d batch %d not increasing: %+v", w, b, pos)
						return
					}
					if !broker.IsSparse(l) && pos[i].Offset != pos[i-1].Offset+1 {
						errs <- fmt.Errorf("writer %d batch %d not contiguous: %+v", w, b, pos)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for p := 0; p < 2; p++ {
		msgs, err := l.Read(ctx, "t", p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			if broker.IsSparse(l) && i > 0 && m.Offset <= msgs[i-1].Offset {
				t.Fatalf("partition %d: offset %d after %d", p, m.Offset, msgs[i-1].Offset)
			}
			if !broker.IsSparse(l) && m.Offset != int64(i) {
				t.Fatalf("partition %d: offset %d at index %d", p, m.Offset, i)
			}
			if seen[string(m.Value)] {
				t.Fatalf("record %s stored twice", m.Value)
			}
			seen[string(m.Value)] = true
		}
	}
	if len(seen) != writers*batches*per {
		t.Fatalf("stored %d records, want %d", len(seen), writers*batches*per)
	}
}

func testReopen(t *testing.T, open Opener) {
	dir := t.TempDir()
	l := open(t, dir)
	ctx := ctxT(t)
	mustTopic(t, l, "t", 2)
	if _, err := l.Append(ctx, broker.Batch{
		Records: []broker.Record{{Topic: "t", Partition: 1, Value: []byte("durable")}},
		Meta:    []broker.Meta{{Key: "pos", Value: []byte("42")}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = open(t, dir)
	defer l.Close()
	msgs, err := l.Read(ctx, "t", 1, 0, 10)
	if err != nil || len(msgs) != 1 || string(msgs[0].Value) != "durable" {
		t.Fatalf("after reopen: got %v, %v", msgs, err)
	}
	if v, _ := l.Meta(ctx, "pos"); string(v) != "42" {
		t.Fatalf("meta after reopen: got %q, want 42", v)
	}
	pos, err := l.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "t", Partition: 1, Value: []byte("next")}}})
	if err != nil {
		t.Fatal(err)
	}
	if broker.IsSparse(l) {
		if pos[0].Offset <= msgs[0].Offset {
			t.Fatalf("offset after reopen: got %d, want above %d", pos[0].Offset, msgs[0].Offset)
		}
		if offs, _ := l.Offsets(ctx, "t"); offs[1].End <= pos[0].Offset {
			t.Fatalf("end after reopen and append: got %d, want above %d", offs[1].End, pos[0].Offset)
		}
		if msgs, err := l.Read(ctx, "t", 1, 0, 0); err != nil || len(msgs) != 2 || string(msgs[1].Value) != "next" {
			t.Fatalf("read after reopen and append: got %v, %v; want durable, next", msgs, err)
		}
		return
	}
	if offs, _ := l.Offsets(ctx, "t"); offs[1].End != 2 {
		t.Fatalf("end after reopen and append: got %d, want 2", offs[1].End)
	}
}

// testSizes checks a Log that implements broker.Sizer: the sizes are
// len(Key)+len(Value) of what Read returns, whatever the headers; it is
// skipped for a Log without it.
func testSizes(t *testing.T, open Opener) {
	l := open(t, t.TempDir())
	defer l.Close()
	sz, ok := l.(broker.Sizer)
	if !ok {
		t.Skip("the Log does not implement broker.Sizer")
	}
	ctx := ctxT(t)
	mustTopic(t, l, "t", 2)
	in := []broker.Record{
		{Topic: "t", Partition: 1, Key: []byte("key"), Value: bytes.Repeat([]byte("v"), 70_000),
			Headers: []broker.Header{{Key: "h", Value: bytes.Repeat([]byte("h"), 300)}}},
		{Topic: "t", Partition: 1, Value: []byte("x")},
		{Topic: "t", Partition: 1},
		{Topic: "t", Partition: 1, Key: []byte("k"), Value: []byte("12345"), Timestamp: time.Now()},
	}
	if _, err := l.Append(ctx, broker.Batch{Records: in}); err != nil {
		t.Fatal(err)
	}
	got, err := sz.Sizes(ctx, "t", 1, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{70_003, 1, 0, 6}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Sizes(from 0, max 10): got %v, want %v", got, want)
	}
	if got, err := sz.Sizes(ctx, "t", 1, 1, 2); err != nil || fmt.Sprint(got) != "[1 0]" {
		t.Fatalf("Sizes(from 1, max 2): got %v, %v; want [1 0]", got, err)
	}
	if got, err := sz.Sizes(ctx, "t", 1, 4, 10); err != nil || len(got) != 0 {
		t.Fatalf("Sizes at end: got %v, %v; want none", got, err)
	}
	if _, err := sz.Sizes(ctx, "t", 1, 5, 10); !errors.Is(err, broker.ErrOffsetOutOfRange) {
		t.Fatalf("Sizes beyond end: got %v, want ErrOffsetOutOfRange", err)
	}
	if _, err := sz.Sizes(ctx, "t", 2, 0, 10); !errors.Is(err, broker.ErrBadPartition) {
		t.Fatalf("Sizes of a bad partition: got %v, want ErrBadPartition", err)
	}
	if _, err := sz.Sizes(ctx, "nope", 0, 0, 10); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Fatalf("Sizes of an unknown topic: got %v, want ErrUnknownTopic", err)
	}
}

// testSparseGaps checks the Read rule of a sparse Log wherever its offsets
// skip: Read from an offset that holds no record returns the next records
// that exist, and nothing only when none exists before End. It is skipped
// for a dense Log.
func testSparseGaps(t *testing.T, open Opener) {
	l := open(t, t.TempDir())
	defer l.Close()
	if !broker.IsSparse(l) {
		t.Skip("the Log has dense offsets")
	}
	ctx := ctxT(t)
	mustTopic(t, l, "t", 1)
	var all []int64
	for b := 0; b < 5; b++ {
		recs := make([]broker.Record, b+1)
		for i := range recs {
			recs[i] = broker.Record{Topic: "t", Partition: 0, Value: []byte(fmt.Sprint(b, i))}
		}
		pos, err := l.Append(ctx, broker.Batch{Records: recs, Meta: []broker.Meta{{Key: "gaps", Value: []byte(fmt.Sprint(b))}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pos {
			all = append(all, p.Offset)
		}
	}
	offs, err := l.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	end := offs[0].End
	if end <= all[len(all)-1] {
		t.Fatalf("end %d, want above the last offset %d", end, all[len(all)-1])
	}
	for from := offs[0].Start; from <= end; from++ {
		var want []int64
		for _, o := range all {
			if o >= from && len(want) < 2 {
				want = append(want, o)
			}
		}
		msgs, err := l.Read(ctx, "t", 0, from, 2)
		if err != nil {
			t.Fatalf("Read(from %d, max 2): %v", from, err)
		}
		var got []int64
		for _, m := range msgs {
			got = append(got, m.Offset)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Read(from %d, max 2): offsets %v, want %v (records at %v, end %d)", from, got, want, all, end)
		}
	}
	if _, err := l.Read(ctx, "t", 0, end+1, 1); !errors.Is(err, broker.ErrOffsetOutOfRange) {
		t.Fatalf("Read beyond end: got %v, want ErrOffsetOutOfRange", err)
	}
	if v, err := l.Meta(ctx, "gaps"); err != nil || string(v) != "4" {
		t.Fatalf("Meta: got %q, %v; want 4", v, err)
	}
}
