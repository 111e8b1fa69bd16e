package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// countState is a fake event-time state: the rows folded so far, and the
// clock.
type countState struct {
	version, rows, wm, maxEvent int64
}

func (s *countState) StateVersion() int64          { return s.version }
func (s *countState) Clock() (wmark, newest int64) { return s.wm, s.maxEvent }

// countFold folds batches into countState: fail makes Fold fail half-way,
// pad lengthens Encode's output, rebuilds counts the Rebuild calls.
type countFold struct {
	fail     bool
	pad      int
	rebuilds int
}

func (f *countFold) Rebuild(_ context.Context, store StateStore, v int64) (*countState, error) {
	f.rebuilds++
	if v < 0 {
		return &countState{version: v, wm: NoTime, maxEvent: NoTime}, nil
	}
	b, err := store.LoadState(v)
	if err != nil {
		return nil, err
	}
	return &countState{version: v, rows: int64(binary.BigEndian.Uint64(b)),
		wm: int64(binary.BigEndian.Uint64(b[8:])), maxEvent: int64(binary.BigEndian.Uint64(b[16:]))}, nil
}

func (f *countFold) Fold(_ context.Context, s *countState, b Batch, meta EventTimeMeta, in []arrow.RecordBatch) ([]arrow.RecordBatch, ProcessStats, error) {
	s.rows += 10 // applied before the failure: the driver must drop it
	if f.fail {
		return nil, ProcessStats{}, errors.New("half-way")
	}
	s.version, s.wm = b.ID, meta.WatermarkMicros()
	s.maxEvent = time.Date(2026, 12, 3, 0, int(b.ID), 0, 0, time.UTC).UnixMicro() // a minute a batch
	return nil, ProcessStats{Duplicates: b.ID}, nil
}

func (f *countFold) Encode(s *countState, dst []byte) ([]byte, error) {
	b := binary.BigEndian.AppendUint64(dst[:0], uint64(s.rows))
	b = binary.BigEndian.AppendUint64(b, uint64(s.wm))
	b = binary.BigEndian.AppendUint64(b, uint64(s.maxEvent))
	return append(b, make([]byte, f.pad)...), nil
}

// memStates is a StateStore in memory that counts its reads.
type memStates struct {
	m     map[int64][]byte
	loads int
}

func (m *memStates) LoadState(v int64) ([]byte, error) {
	m.loads++
	b, ok := m.m[v]
	if !ok {
		return nil, fmt.Errorf("state %d: %w", v, ErrNoEntry)
	}
	return b, nil
}

func (m *memStates) StateDir() string { return "memory" }

// TestEventTimeDriver: the driver plans each batch's watermark from the
// state before it (the newest event time minus the delay), reads the store
// only for a version it does not hold, drops a state a fold left half
// applied (the next batch rebuilds it from the store), and keeps its
// encoding buffer only while it is small.
func TestEventTimeDriver(t *testing.T) {
	ctx := context.Background()
	f := &countFold{}
	p := NewEventDriver[*countState](f, time.Minute, "")
	store := &memStates{m: map[int64][]byte{}}
	run := func(id int64) {
		t.Helper()
		if err := p.LoadState(ctx, store, id-1); err != nil {
			t.Fatal(err)
		}
		meta, err := p.PlanMeta(ctx, Batch{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.LoadState(ctx, store, id-1); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Process(ctx, Batch{ID: id, Meta: meta}, nil); err != nil {
			t.Fatal(err)
		}
		b, err := p.SaveState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		store.m[id] = append([]byte(nil), b...)
	}
	for id := int64(0); id < 3; id++ {
		run(id)
	}
	if store.loads != 0 || f.rebuilds != 1 {
		t.Fatalf("three batches read the store %d times and rebuilt %d times, want 0 and 1 (the empty start)", store.loads, f.rebuilds)
	}
	meta, err := p.PlanMeta(ctx, Batch{ID: 3})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ParseEventTimeMeta(meta)
	if want := time.Date(2026, 12, 3, 0, 1, 0, 0, time.UTC); !m.Watermark.Equal(want) {
		t.Errorf("batch 3's watermark: got %v, want %v (batch 2's newest event minus a minute)", m.Watermark, want)
	}
	if batch, st := p.LastStats(); batch != 2 || st.Duplicates != 2 || p.BatchStats().Watermark.IsZero() {
		t.Errorf("last stats: batch %d %+v, want batch 2 with its counters and watermark", batch, st)
	}

	f.fail = true
	if _, err := p.Process(ctx, Batch{ID: 3, Meta: meta}, nil); err == nil {
		t.Fatal("a failing fold's batch succeeded")
	}
	if _, held := p.State(); held {
		t.Fatal("the driver kept a state the fold left half applied")
	}
	f.fail = false
	if _, err := p.Process(ctx, Batch{ID: 3, Meta: meta}, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.State(); store.loads != 1 || st.rows != 40 {
		t.Errorf("after the failure: %d store reads, %d rows, want 1 read (version 2) and 40 rows", store.loads, st.rows)
	}

	f.pad = MaxKeptStateBuffer + 1
	if _, err := p.SaveState(ctx); err != nil {
		t.Fatal(err)
	}
	if p.buf != nil {
		t.Errorf("after a %d-byte state the driver keeps a %d-byte buffer, want none", MaxKeptStateBuffer+25, cap(p.buf))
	}
}
