package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"lakehouse/broker"
	"lakehouse/internal/fault"
)

// rec builds a record for decide: a data record of producer pid at off
// (txn: with the transactional flag), or a marker when ctl is "commit" or
// "abort".
func rec(off, pid int64, txn bool, ctl string) *kgo.Record {
	var attrs uint8
	if txn || ctl != "" {
		attrs |= 0b1_0000
	}
	r := &kgo.Record{Offset: off, ProducerID: pid}
	if ctl != "" {
		attrs |= 0b10_0000
		r.Key = make([]byte, 4)
		switch ctl {
		case "commit":
			binary.BigEndian.PutUint16(r.Key[2:], 1)
		case "abort":
		default:
			binary.BigEndian.PutUint16(r.Key[2:], 7) // a control type that is no marker
		}
	}
	r.Attrs = kgo.RecordAttrs{}
	setAttrs(&r.Attrs, attrs)
	return r
}

// setAttrs sets a RecordAttrs, whose field is unexported, through the
// decoding franz-go uses.
func setAttrs(a *kgo.RecordAttrs, attrs uint8) {
	// A one-record batch with these attributes, decoded by franz-go.
	b := kmsg.RecordBatch{Magic: 2, Attributes: int16(attrs), NumRecords: 1, LastOffsetDelta: 0}
	r := kmsg.Record{Key: make([]byte, 4)}
	r.Length = int32(len(r.AppendTo(nil)) - 1) // what follows the length varint
	b.Records = r.AppendTo(nil)
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	rp := &kmsg.FetchResponseTopicPartition{RecordBatches: raw}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{KeepControlRecords: true, IsolationLevel: kgo.ReadUncommitted(), DisableCRCValidation: true}, rp, kgo.DefaultDecompressor(), nil)
	if len(fp.Records) != 1 {
		panic(fmt.Sprintf("setAttrs: decoded %d records (%v)", len(fp.Records), fp.Err))
	}
	*a = fp.Records[0].Attrs
}

func offsets(recs []*kgo.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.Offset
	}
	return out
}

// TestDecide: transactional records are kept or dropped by their
// producer's next marker, whatever other producers do in between; a record
// whose marker is not in the response stops the judging there, unless a
// look-ahead's outcome covers it; non-transactional records are kept.
func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name  string
		recs  []*kgo.Record
		known *txnOutcome
		keep  string
		cut   int
	}{
		{"one producer, commit then abort",
			[]*kgo.Record{rec(0, 1, true, ""), rec(1, 1, true, ""), rec(2, 1, false, "commit"), rec(3, 1, true, ""), rec(4, 1, false, "abort")},
			nil, "[0 1]", 5},
		{"interleaved producers",
			[]*kgo.Record{rec(0, 1, true, ""), rec(1, 2, true, ""), rec(2, 1, true, ""), rec(3, 2, false, "commit"), rec(4, 1, false, "abort")},
			nil, "[1]", 5},
		{"non-transactional records and an unknown control record",
			[]*kgo.Record{rec(0, 9, false, ""), rec(1, 1, true, ""), rec(2, 1, false, "leader"), rec(3, 9, false, ""), rec(4, 1, false, "commit")},
			nil, "[0 1 3]", 5},
		{"a transaction cut by the response",
			[]*kgo.Record{rec(0, 1, true, ""), rec(1, 1, false, "commit"), rec(2, 9, false, ""), rec(3, 1, true, ""), rec(4, 9, false, "")},
			nil, "[0 2]", 3},
		{"another producer's marker does not decide",
			[]*kgo.Record{rec(0, 1, true, ""), rec(1, 2, false, "abort")},
			nil, "[]", 0},
		{"a look-ahead decides the cut transaction",
			[]*kgo.Record{rec(5, 1, true, ""), rec(6, 1, true, ""), rec(7, 2, true, ""), rec(8, 2, false, "commit")},
			&txnOutcome{producer: 1, first: 5, marker: 20, outcome: aborted}, "[7]", 4},
		{"a look-ahead of another range does not",
			[]*kgo.Record{rec(25, 1, true, ""), rec(26, 9, false, "")},
			&txnOutcome{producer: 1, first: 5, marker: 20, outcome: committed}, "[]", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep, cut := decide(tc.recs, tc.known)
			if got := fmt.Sprint(offsets(keep)); got != tc.keep || cut != tc.cut {
				t.Fatalf("decide: kept %s, cut at %d; want %s, %d", got, cut, tc.keep, tc.cut)
			}
		})
	}
}

func testLog(t *testing.T) (*Log, context.Context) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	l, err := Open(ctx, Config{Seeds: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.CreateTopic(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	return l, ctx
}

// noise returns n random bytes drawn from seed: padding that zstd cannot
// shrink, so that a backlog's size on the broker (what a fetch's limits
// count) is its records' size.
func noise(seed string, n int) []byte {
	var key [32]byte
	copy(key[:], seed)
	out := make([]byte, max(n, 0))
	rand.NewChaCha8(key).Read(out)
	return out
}

// appendTxn appends n records of size bytes (random after a tag, which
// compression cannot shrink) to t/0 in one transaction,
// aborted after its records were produced when abort is set, and returns
// the offsets of a committed one.
func appendTxn(t *testing.T, ctx context.Context, l *Log, tag string, n, size int, abort bool) []int64 {
	t.Helper()
	var b broker.Batch
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("%s %d ", tag, i)
		b.Records = append(b.Records, broker.Record{Topic: "t", Value: append([]byte(v), noise(v, size-len(v))...)})
	}
	boom := errors.New("boom")
	if abort {
		fault.ArmErr("kafka.before-commit", func() error { return boom })
		defer fault.Disarm()
	}
	pos, err := l.Append(ctx, b)
	if abort != errors.Is(err, boom) || !abort && err != nil {
		t.Fatalf("append %s (abort %v): %v", tag, abort, err)
	}
	out := make([]int64, len(pos))
	for i, p := range pos {
		out[i] = p.Offset
	}
	return out
}

// TestJudgeWithoutAbortedList reads a backlog of small transactions, every
// other one aborted, and two larger than a fetch (one aborted, one
// committed), through fetch responses whose list of aborted transactions
// was removed, as kfake's were when cut at the request limit: franz-go's
// read_committed reading of those responses returns aborted records, the
// Log's returns exactly the committed ones, looking ahead for the markers
// of the large transactions. Inconclusive unless both happened.
func TestJudgeWithoutAbortedList(t *testing.T) {
	l, ctx := testLog(t)
	var want []int64
	for i := 0; i < 40; i++ {
		want = append(want, appendTxn(t, ctx, l, fmt.Sprintf("s%d", i), 10, 20<<10, i%2 == 1)...)
		switch i {
		case 10:
			want = append(want, appendTxn(t, ctx, l, "big-aborted", 12, 512<<10, true)...)
		case 20:
			want = append(want, appendTxn(t, ctx, l, "big-committed", 12, 512<<10, false)...)
		}
	}
	offs, err := l.Offsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	var known txnOutcome
	leaked, lookAheads := 0, map[outcome]int{}
	for pos := int64(0); pos < offs[0].End; {
		rp, err := l.fetchPartition(ctx, "t", 0, pos, readCommitted)
		if err != nil {
			t.Fatal(err)
		}
		rp.AbortedTransactions = nil
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: pos, IsolationLevel: kgo.ReadCommitted(), Topic: "t"}, rp, decompressor, nil)
		for _, r := range fp.Records {
			if !isCommitted(want, r.Offset) {
				leaked++
			}
		}
		before := known
		f, err := l.judge(ctx, "t", 0, pos, rp, &known)
		if err != nil {
			t.Fatalf("judge at %d: %v", pos, err)
		}
		if known != before {
			lookAheads[known.outcome]++
		}
		for _, r := range f.recs {
			got = append(got, r.Offset)
		}
		if f.next <= pos {
			t.Fatalf("judge at %d: next %d, no progress", pos, f.next)
		}
		pos = f.next
	}
	if leaked == 0 || lookAheads[aborted] == 0 || lookAheads[committed] == 0 {
		t.Fatalf("inconclusive: franz-go read %d aborted records from the responses without their lists; look-aheads %v (want an abort and a commit)", leaked, lookAheads)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("judged %d records, %d committed:\ngot  %v\nwant %v", len(got), len(want), got, want)
	}
	t.Logf("%d committed records read; franz-go's read_committed reading of the same responses returned %d aborted ones; look-aheads %v", len(got), leaked, lookAheads)
}

func isCommitted(want []int64, off int64) bool {
	for _, w := range want {
		if w == off {
			return true
		}
	}
	return false
}

// TestJudgeRefusesContradiction: a response whose list names a committed
// transaction as aborted fails the fetch instead of picking a side.
func TestJudgeRefusesContradiction(t *testing.T) {
	l, ctx := testLog(t)
	appendTxn(t, ctx, l, "c", 3, 100, false)
	rp, err := l.fetchPartition(ctx, "t", 0, 0, readCommitted)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := decode("t", 0, 0, rp)
	if err != nil || len(recs) == 0 {
		t.Fatalf("decode: %d records, %v", len(recs), err)
	}
	var known txnOutcome
	if f, err := l.judge(ctx, "t", 0, 0, rp, &known); err != nil || len(f.recs) != 3 {
		t.Fatalf("judge of the true response: %d records, %v; want 3", len(f.recs), err)
	}
	a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
	a.ProducerID, a.FirstOffset = recs[0].ProducerID, 0
	rp.AbortedTransactions = append(rp.AbortedTransactions, a)
	if _, err := l.judge(ctx, "t", 0, 0, rp, &known); !errors.Is(err, errContradiction) {
		t.Fatalf("judge of a response listing the committed transaction as aborted: %v; want errContradiction", err)
	}
}
