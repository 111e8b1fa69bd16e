package silver

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/stream"
)

func TestSampleKeepsEditAndNew(t *testing.T) {
	h := newHarness(t, Config{})
	sample := sampleEvents(t)
	r := h.batch(sample...)
	if got, want := len(r.IDs), 20; got != want { // 19 edit + 1 new in the sample
		t.Errorf("rows: got %d, want %d", got, want)
	}
	if r.Counts.Unparseable != 0 || r.Counts.Late != 0 || r.Counts.Duplicates != 0 {
		t.Errorf("counts: got %+v, want zeros", r.Counts)
	}
	if !r.Meta.Watermark.IsZero() {
		t.Errorf("first batch watermark: got %v, want none", r.Meta.Watermark)
	}
}

func TestResentWithinWindowAppearsOnce(t *testing.T) {
	tests := []struct {
		name string
		// batches of event indexes; every event i is ev{ID: uuidFor(i)}
		batches [][]int
		want    []int // unique ids in silver, in order
		dups    int64
	}{
		{"same batch", [][]int{{1, 2, 1, 3, 2}}, []int{1, 2, 3}, 2},
		{"next batch", [][]int{{1, 2, 3}, {3, 4, 1}}, []int{1, 2, 3, 4}, 2},
		{"many batches later", [][]int{{1}, {2}, {3}, {4}, {1, 2, 3, 4, 5}}, []int{1, 2, 3, 4, 5}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{MaxDeltaChain: 2})
			var got []string
			var dups int64
			for bi, idx := range tc.batches {
				var vals [][]byte
				for _, i := range idx {
					// Same meta.id and edit time; every resend has a new
					// bronze offset (the harness numbers rows).
					vals = append(vals, eventJSON(ev{ID: uuidFor(i), At: base.Add(time.Duration(i+bi) * time.Second)}))
				}
				r := h.batch(vals...)
				got = append(got, r.IDs...)
				dups += r.Counts.Duplicates
			}
			var want []string
			for _, i := range tc.want {
				want = append(want, uuidFor(i))
			}
			if !slices.Equal(got, want) {
				t.Errorf("silver ids: got %v, want %v", got, want)
			}
			if dups != tc.dups {
				t.Errorf("duplicates dropped: got %d, want %d", dups, tc.dups)
			}
		})
	}
}

func TestLateEventsDroppedAndCounted(t *testing.T) {
	h := newHarness(t, Config{})
	now := base.Add(time.Hour)
	// Batch 0 establishes the newest event time; the watermark of batch 1 is
	// now - 10 min.
	r0 := h.batch(eventJSON(ev{ID: uuidFor(1), At: now}))
	if len(r0.IDs) != 1 {
		t.Fatalf("batch 0 rows: got %d, want 1", len(r0.IDs))
	}
	r1 := h.batch(
		eventJSON(ev{ID: uuidFor(2), At: now.Add(-30 * time.Minute)}), // late
		eventJSON(ev{ID: uuidFor(3), At: now.Add(-5 * time.Minute)}),  // on time
		eventJSON(ev{ID: uuidFor(4), At: now.Add(-30 * time.Minute)}), // late
	)
	if got, want := r1.IDs, []string{uuidFor(3)}; !slices.Equal(got, want) {
		t.Errorf("batch 1 rows: got %v, want %v", got, want)
	}
	if got, want := r1.Counts.Late, int64(2); got != want {
		t.Errorf("late rows: got %d, want %d", got, want)
	}
	if got, want := r1.Meta.Watermark, now.Add(-DefaultWatermarkDelay); !got.Equal(want) {
		t.Errorf("watermark: got %v, want %v", got, want)
	}
}

// An id whose dedup state expired is resent: it must be dropped as late, not
// written a second time.
func TestResendAfterExpiryIsLate(t *testing.T) {
	const delay = 10 * time.Minute
	h := newHarness(t, Config{WatermarkDelay: delay, MaxDeltaChain: 3})
	t0 := base
	first := eventJSON(ev{ID: uuidFor(7), At: t0})
	if r := h.batch(first); len(r.IDs) != 1 {
		t.Fatalf("first send: got %d rows, want 1", len(r.IDs))
	}
	// Move event time on so the watermark passes t0 + delay: the id expires.
	h.batch(eventJSON(ev{ID: uuidFor(8), At: t0.Add(delay + 5*time.Minute)}))
	h.batch(eventJSON(ev{ID: uuidFor(9), At: t0.Add(2*delay + 5*time.Minute)}))
	h.batch(eventJSON(ev{ID: uuidFor(10), At: t0.Add(2*delay + 6*time.Minute)}))
	if h.p.state().watermark <= t0.Add(delay).UnixMicro() {
		t.Fatalf("watermark %v has not passed event_time + delay %v", microsTime(h.p.state().watermark), t0.Add(delay))
	}
	if _, ok := h.p.state().ids[keyOf(uuidFor(7))]; ok {
		t.Fatalf("id of event 7 still in state after expiry")
	}
	r := h.batch(first) // the resend: same meta.id, same edit time, new offset
	if len(r.IDs) != 0 {
		t.Errorf("resend after expiry written: got rows %v, want none", r.IDs)
	}
	if r.Counts.Late != 1 || r.Counts.Duplicates != 0 {
		t.Errorf("resend counts: got %+v, want 1 late, 0 duplicates", r.Counts)
	}
}

func TestEvictionBoundsState(t *testing.T) {
	const delay = time.Minute
	h := newHarness(t, Config{WatermarkDelay: delay})
	n := 0
	for b := 0; b < 60; b++ { // one batch per 10 s of event time, 20 events each
		var vals [][]byte
		for i := 0; i < 20; i++ {
			vals = append(vals, eventJSON(ev{ID: uuidFor(n), At: base.Add(time.Duration(b*10) * time.Second)}))
			n++
		}
		h.batch(vals...)
	}
	// Live: ids with event_time + delay >= watermark (newest - delay), i.e.
	// the last 2*delay of event time = 12 batches, plus up to a sweep step.
	if got, max := h.p.LiveIDs(), 20*(12+2); got > max {
		t.Errorf("live ids: got %d, want at most %d of %d emitted", got, max, n)
	}
}

func TestUnparseableCounted(t *testing.T) {
	h := newHarness(t, Config{})
	noRev := bytes.Replace(eventJSON(ev{ID: uuidFor(2), At: base}), []byte(`"revision"`), []byte(`"rev"`), 1)
	r := h.batch(
		[]byte(`{"meta": {"id": "x"`), // truncated JSON
		noRev,                         // edit without revision
		[]byte(`{"meta":{"id":"y"}}`), // no type
		eventJSON(ev{ID: uuidFor(3), At: base}),
		eventJSON(ev{ID: uuidFor(4), Type: "log", At: base}),
	)
	if got, want := r.Counts.Unparseable, int64(3); got != want {
		t.Errorf("unparseable: got %d, want %d", got, want)
	}
	if got, want := r.IDs, []string{uuidFor(3)}; !slices.Equal(got, want) {
		t.Errorf("rows: got %v, want %v", got, want)
	}
}

// A re-run of batch N by a fresh processor (as after a crash) starts from
// state N-1 (rebuilt through the delta chain) and the recorded watermark,
// and produces the same rows and counts.
func TestReplayIsDeterministic(t *testing.T) {
	for _, chain := range []int{1, 3, 50} {
		h := newHarness(t, Config{MaxDeltaChain: chain})
		var results []batchResult
		n := 0
		for b := 0; b < 8; b++ {
			var vals [][]byte
			for i := 0; i < 10; i++ {
				at := base.Add(time.Duration(b*3) * time.Minute)
				id := n
				switch i {
				case 7:
					id = n - 15 // resend of an earlier event
					at = base.Add(time.Duration(max(b-1, 0)*3) * time.Minute)
				case 8:
					at = at.Add(-40 * time.Minute) // late
				}
				vals = append(vals, eventJSON(ev{ID: uuidFor(id), At: at}))
				n++
			}
			results = append(results, h.batch(vals...))
			if b < 3 {
				continue
			}
			// Replay batch b with a fresh processor: state b-1 from disk.
			fresh := NewProcessor(Config{MaxDeltaChain: chain, Logger: slog.New(slog.DiscardHandler)})
			h.off -= int64(len(vals))
			again := h.run(fresh, int64(b), vals...)
			if !slices.Equal(again.IDs, results[b].IDs) || again.Counts != results[b].Counts {
				t.Errorf("chain %d: replay of batch %d: got %v %+v, want %v %+v",
					chain, b, again.IDs, again.Counts, results[b].IDs, results[b].Counts)
			}
			h.p = fresh // continue with the replayed processor
		}
	}
}

func TestStateRoundTripAndCorruption(t *testing.T) {
	s := newState(4)
	s.maxEvent, s.watermark = base.UnixMicro(), base.Add(-time.Minute).UnixMicro()
	for i := 0; i < 100; i++ {
		s.add(keyOf(uuidFor(i)), base.UnixMicro())
	}
	full := s.encode(kindFull, time.Minute, nil)
	got, err := rebuild(4, full, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ids) != 100 || got.maxEvent != s.maxEvent || got.watermark != s.watermark || got.lastFull != 4 {
		t.Errorf("round trip: got %d ids max %d wm %d full %d, want 100 %d %d 4",
			len(got.ids), got.maxEvent, got.watermark, got.lastFull, s.maxEvent, s.watermark)
	}
	bad := slices.Clone(full)
	bad[headerSize+3] ^= 1
	if _, err := rebuild(4, bad, nil, time.Minute); !errors.Is(err, ErrCorruptState) {
		t.Errorf("flipped bit: got %v, want ErrCorruptState", err)
	}
	delta := s.encode(kindDelta, time.Minute, nil)
	missing := func(int64) ([]byte, error) { return nil, stream.ErrNoEntry }
	if _, err := rebuild(4, delta, missing, time.Minute); !errors.Is(err, ErrCorruptState) {
		t.Errorf("broken delta chain: got %v, want ErrCorruptState", err)
	}
}

func TestKeyOf(t *testing.T) {
	u := "80a958b0-04c1-43d9-8d94-8f3b24526166"
	k := keyOf(u)
	if k[0] != 0x80 || k[15] != 0x66 {
		t.Errorf("uuid key: got %x", k)
	}
	if a, b := keyOf("not-a-uuid"), keyOf("not-a-uuid"); keyOf("not-a-uuid") == keyOf("not-a-uuid2") || a != b {
		t.Errorf("hashed keys are not a function of the id")
	}
	if keyOf("x")[6]>>4 != 0 {
		t.Errorf("hashed key has a uuid version nibble")
	}
}

// A batch that fails half-way must not leave a half-applied state behind:
// the next attempt rebuilds version N-1 from the checkpoint.
func TestFailedProcessDropsPartialState(t *testing.T) {
	h := newHarness(t, Config{})
	h.batch(eventJSON(ev{ID: uuidFor(1), At: base}))
	ctx := context.Background()
	b := stream.Batch{Query: QueryName, ID: 1}
	meta, err := h.p.PlanMeta(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	b.Meta = meta
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	rec := bronzeRecord(t, 10, eventJSON(ev{ID: uuidFor(2), At: base}))
	if _, err := h.p.Process(cctx, b, []arrow.RecordBatch{rec}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled process: got %v, want context.Canceled", err)
	}
	if h.p.state() != nil {
		t.Fatalf("state kept after a failed batch")
	}
	h.meta[1] = meta
	h.next = 2
	r := h.run(h.p, 1, eventJSON(ev{ID: uuidFor(2), At: base}), eventJSON(ev{ID: uuidFor(1), At: base}))
	if got, want := r.IDs, []string{uuidFor(2)}; !slices.Equal(got, want) || r.Counts.Duplicates != 1 {
		t.Errorf("retry: got %v (%d duplicates), want %v (1)", got, r.Counts.Duplicates, want)
	}
}

// countingStore counts the state files a processor reads.
type countingStore struct {
	stream.StateStore
	loads int
}

func (c *countingStore) LoadState(v int64) ([]byte, error) {
	c.loads++
	return c.StateStore.LoadState(v)
}

// TestLoadStateReadsOnlyWhatItLacks: the runner hands its state store to
// the processor before every plan and every batch; a processor that holds
// the version asked for reads nothing, a fresh one (a restart) reads the
// version and the deltas before it.
func TestLoadStateReadsOnlyWhatItLacks(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, Config{MaxDeltaChain: 4})
	now := time.Now().UTC()
	for i := range 3 {
		h.batch(eventJSON(ev{ID: uuidFor(i), At: now}))
	}
	last := h.next - 1
	store := &countingStore{StateStore: h.cp}
	if err := h.p.LoadState(ctx, store, last); err != nil {
		t.Fatal(err)
	}
	if store.loads != 0 {
		t.Errorf("a processor holding version %d read %d state files to load it", last, store.loads)
	}
	fresh := NewProcessor(Config{MaxDeltaChain: 4, Logger: slog.New(slog.DiscardHandler)})
	if err := fresh.LoadState(ctx, store, last); err != nil {
		t.Fatal(err)
	}
	if store.loads < 1 || fresh.LiveIDs() != h.p.LiveIDs() {
		t.Errorf("a fresh processor read %d state files and holds %d ids, want at least 1 read and %d ids", store.loads, fresh.LiveIDs(), h.p.LiveIDs())
	}
}
