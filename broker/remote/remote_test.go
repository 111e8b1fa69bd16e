package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/broker/remote"
)

// served is a broker.DB with records in two topics, served by Handler.
func served(t *testing.T) (*broker.DB, *remote.Log) {
	t.Helper()
	ctx := context.Background()
	db, err := broker.Open(filepath.Join(t.TempDir(), "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.CreateTopic(ctx, "t", 3); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTopic(ctx, "u", 1); err != nil {
		t.Fatal(err)
	}
	var recs []broker.Record
	for i := range 25_000 { // more than one read request's worth in partition 0
		r := broker.Record{Topic: "t", Partition: i % 2, Value: []byte(fmt.Sprintf("v%d", i)), Timestamp: time.Unix(1_700_000_000, int64(i))}
		if i%3 == 0 {
			r.Key = []byte(fmt.Sprintf("k%d", i))
		}
		if i%5 == 0 {
			r.Headers = []broker.Header{{Key: "reason", Value: []byte("x")}, {Key: "empty", Value: []byte{}}}
		}
		recs = append(recs, r)
	}
	recs = append(recs, broker.Record{Topic: "u", Partition: 0, Key: []byte{}, Value: []byte{}})
	if _, err := db.Append(ctx, broker.Batch{Records: recs, Meta: []broker.Meta{{Key: "pos", Value: []byte("42")}}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(remote.Handler(db))
	t.Cleanup(srv.Close)
	l, err := remote.Dial(ctx, srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	return db, l
}

// TestRemoteReadsEqualLocal: through the wire, topics, offsets, metadata
// and every message (keys nil or empty, headers, timestamps) equal what the
// broker returns in process, reads larger than one request included.
func TestRemoteReadsEqualLocal(t *testing.T) {
	ctx := context.Background()
	db, l := served(t)
	for _, get := range []func(broker.Log) (any, error){
		func(b broker.Log) (any, error) { return b.Topics(ctx) },
		func(b broker.Log) (any, error) { return b.Offsets(ctx, "t") },
		func(b broker.Log) (any, error) { return b.Meta(ctx, "pos") },
		func(b broker.Log) (any, error) { return b.Meta(ctx, "never") },
		func(b broker.Log) (any, error) { return b.Read(ctx, "t", 0, 0, 0) },
		func(b broker.Log) (any, error) { return b.Read(ctx, "t", 0, 100, 12_000) },
		func(b broker.Log) (any, error) { return b.Read(ctx, "t", 1, 12_500, 10) },
		func(b broker.Log) (any, error) { return b.Read(ctx, "t", 2, 0, 10) },
		func(b broker.Log) (any, error) { return b.Read(ctx, "u", 0, 0, 10) },
	} {
		want, werr := get(db)
		got, gerr := get(l)
		if werr != nil || gerr != nil {
			t.Fatalf("local %v, remote %v", werr, gerr)
		}
		if !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Fatalf("remote %v\nlocal  %v", brief(got), brief(want))
		}
	}
	if msgs, _ := l.Read(ctx, "t", 0, 0, 0); len(msgs) != 12_500 {
		t.Fatalf("read a whole partition of 12,500: %d messages", len(msgs))
	}
}

// normalize makes timestamps comparable (local ones carry a monotonic
// clock reading and a location).
func normalize(v any) any {
	if msgs, ok := v.([]broker.Message); ok {
		out := make([]broker.Message, len(msgs))
		for i, m := range msgs {
			m.Timestamp = m.Timestamp.UTC()
			out[i] = m
		}
		return out
	}
	return v
}

func brief(v any) string {
	if msgs, ok := v.([]broker.Message); ok {
		return fmt.Sprintf("%d messages", len(msgs))
	}
	return fmt.Sprint(v)
}

// TestRemoteErrorsKeepTheirIdentity: the broker's errors are the same
// errors through the wire, and a dialed log never writes.
func TestRemoteErrorsKeepTheirIdentity(t *testing.T) {
	ctx := context.Background()
	db, l := served(t)
	if _, err := l.Offsets(ctx, "nope"); !errors.Is(err, broker.ErrUnknownTopic) {
		t.Errorf("unknown topic: %v", err)
	}
	if _, err := l.Read(ctx, "t", 7, 0, 1); !errors.Is(err, broker.ErrBadPartition) {
		t.Errorf("bad partition: %v", err)
	}
	if _, err := l.Read(ctx, "t", 0, 1<<40, 1); !errors.Is(err, broker.ErrOffsetOutOfRange) {
		t.Errorf("beyond the end: %v", err)
	}
	if _, err := db.Retain(ctx, "t", broker.Retention{MaxAge: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	offs, _ := db.Offsets(ctx, "t")
	if offs[0].Start == 0 {
		t.Fatal("inconclusive: retention trimmed nothing")
	}
	if _, err := l.Read(ctx, "t", 0, 0, 1); !errors.Is(err, broker.ErrOffsetTrimmed) {
		t.Errorf("trimmed: %v", err)
	}
	if _, err := l.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "t", Value: []byte("x")}}}); !errors.Is(err, remote.ErrReadOnly) {
		t.Errorf("append: %v", err)
	}
	if err := l.CreateTopic(ctx, "w", 1); !errors.Is(err, remote.ErrReadOnly) {
		t.Errorf("create topic: %v", err)
	}
	if ts, _ := db.Topics(ctx); len(ts) != 2 {
		t.Errorf("the broker has %d topics after a remote create", len(ts))
	}
}

// TestRemoteWaitSeesAppends: Wait returns once the partition grows past
// the offset, and with ctx's error when it does not.
func TestRemoteWaitSeesAppends(t *testing.T) {
	ctx := context.Background()
	db, l := served(t)
	l.PollEvery = 10 * time.Millisecond
	offs, _ := db.Offsets(ctx, "u")
	end := offs[0].End
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := l.Wait(short, "u", 0, end); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait with nothing new: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx, "u", 0, end) }()
	if _, err := db.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "u", Partition: 0, Value: []byte("new")}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Wait did not see the append within a minute")
	}
}
