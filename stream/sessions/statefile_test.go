package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"lakehouse/stream"
	"lakehouse/stream/silver/silvertest"
)

// With 10,000 open sessions, a batch that touches one of them saves a
// delta of a few hundred bytes, not the whole state, and full snapshots
// come every MaxDeltaChain batches.
func TestDeltaBytesProportionalToChange(t *testing.T) {
	const open, batches, maxDelta = 10_000, 100, 1024
	h := newHarness(t, Config{})
	var first []edit
	for i := 0; i < open; i++ {
		first = append(first, edit{Wiki: "enwiki", User: fmt.Sprintf("Editor %05d", i), Title: fmt.Sprintf("Page %d", i), At: t0.UnixMicro(), Delta: 10})
	}
	h.run(h.p, -1, first)
	var fulls, deltas, deltaBytes, largest int
	for n := 1; n <= batches; n++ {
		i := n * 37 % open
		e := edit{Wiki: "enwiki", User: fmt.Sprintf("Editor %05d", i), Title: fmt.Sprintf("Extra %d", n),
			At: t0.Add(time.Duration(n) * 5 * time.Second).UnixMicro(), Delta: -3}
		if rows, _ := h.run(h.p, -1, []edit{e}); len(rows) != 0 {
			t.Fatalf("batch %d emitted %d sessions, want 0", n, len(rows))
		}
		b, err := h.cp.LoadState(int64(n))
		if err != nil {
			t.Fatal(err)
		}
		if b[4] == kindFull {
			fulls++ // the buffer kept after a large one: stream's TestEventTimeDriver
			continue
		}
		deltas++
		deltaBytes += len(b)
		largest = max(largest, len(b))
		if len(b) >= maxDelta {
			t.Errorf("batch %d touching one of %d sessions saved a %d-byte delta, want < %d", n, open, len(b), maxDelta)
		}
	}
	full, err := h.cp.LoadState(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d open sessions: full snapshot %d bytes; %d deltas, %d bytes each on average, largest %d; %d full snapshots in %d batches",
		open, len(full), deltas, deltaBytes/max(deltas, 1), largest, fulls, batches)
	if want := batches / DefaultMaxDeltaChain; fulls > want {
		t.Errorf("full snapshots in %d batches: got %d, want at most %d (MaxDeltaChain %d)", batches, fulls, want, DefaultMaxDeltaChain)
	}
	if got := h.p.OpenSessions(); got != open {
		t.Errorf("open sessions: got %d, want %d", got, open)
	}
	checkRebuild(t, h, batches)
}

// A session that batch N moves (an edit before its start) and then merges
// into a larger one is removed under its key in N-1, not its new start.
func TestDeltaKeysByStartBefore(t *testing.T) {
	h := newHarness(t, Config{SessionGap: 30 * time.Minute, WatermarkDelay: 2 * time.Hour})
	e := func(title, hhmm string) edit {
		return edit{Wiki: "enwiki", User: "Eve", Title: title, At: at(hhmm), Delta: 1}
	}
	h.run(h.p, -1, []edit{e("a", "0m"), e("b1", "45m"), e("b2", "50m"), e("b3", "55m")})
	h.run(h.p, -1, []edit{e("a2", "-20m"), e("c", "20m")}) // a2 moves A's start; c bridges A into B
	ss := h.p.state().Editors[editorKey("enwiki", "Eve")].Sessions
	if len(ss) != 1 || ss[0].Start != at("-20m") || ss[0].Pages.len() != 6 {
		t.Fatalf("sessions after the bridge: got %d, first %+v; want one from -20m with 6 pages", len(ss), ss[0])
	}
	b, err := h.cp.LoadState(1)
	if err != nil {
		t.Fatal(err)
	}
	if b[4] != kindDelta {
		t.Fatalf("state 1: kind %d, want a delta", b[4])
	}
	checkRebuild(t, h, 1)
}

// Every flipped byte and every truncation of a state file is refused with
// ErrCorruptState; so is a delta whose base version is missing or does not
// hold the sessions it names. A missing top version is a lost checkpoint.
func TestCorruptStateRefused(t *testing.T) {
	h := newHarness(t, Config{SessionGap: 30 * time.Minute, WatermarkDelay: 10 * time.Minute})
	for _, batch := range timeline[:3] {
		h.run(h.p, -1, batch)
	}
	load := h.cp.LoadState
	for v := int64(0); v <= 1; v++ { // 0 is full, 1 a delta (Alice continues: an update)
		good, err := load(v)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := good[4], []byte{kindFull, kindDelta}[v]; got != want {
			t.Fatalf("state %d: kind %d, want %d", v, got, want)
		}
		for i := range good {
			bad := slices.Clone(good)
			bad[i] ^= 1 << (i % 8)
			if _, err := rebuild(v, bad, load); !errors.Is(err, ErrCorruptState) {
				t.Errorf("state %d, byte %d flipped: got %v, want ErrCorruptState", v, i, err)
			}
			if _, err := rebuild(v, good[:i], load); !errors.Is(err, ErrCorruptState) {
				t.Errorf("state %d truncated to %d bytes: got %v, want ErrCorruptState", v, i, err)
			}
		}
	}
	delta, err := load(1)
	if err != nil {
		t.Fatal(err)
	}
	missing := func(int64) ([]byte, error) { return nil, fmt.Errorf("load: %w", stream.ErrNoEntry) }
	if _, err := rebuild(1, delta, missing); !errors.Is(err, ErrCorruptState) || errors.Is(err, stream.ErrNoEntry) {
		t.Errorf("delta chain broken: got %v, want ErrCorruptState and not ErrNoEntry", err)
	}
	emptyBase := func(int64) ([]byte, error) { return newState(0).encode(kindFull, nil), nil }
	if _, err := rebuild(1, delta, emptyBase); !errors.Is(err, ErrCorruptState) {
		t.Errorf("delta on a base without its sessions: got %v, want ErrCorruptState", err)
	}
	if _, err := rebuild(1, nil, missing); !errors.Is(err, stream.ErrNoEntry) {
		t.Errorf("missing version: got %v, want ErrNoEntry", err)
	}

	p := NewProcessor(Config{Logger: slog.New(slog.DiscardHandler)})
	bad := slices.Clone(delta)
	bad[len(bad)/2] ^= 0x10
	if err := p.LoadState(context.Background(), memStore{1: bad}, 1); !errors.Is(err, ErrCorruptState) {
		t.Errorf("processor loading a flipped delta: got %v, want ErrCorruptState", err)
	}
	if err := p.LoadState(context.Background(), memStore{}, 50); err != nil || p.OpenSessions() != 0 {
		t.Errorf("processor loading a lost version: got %v with %d sessions, want an empty state", err, p.OpenSessions())
	}
}

// A state saved in the JSON format of earlier builds (testdata, written by
// the code before the binary format) loads with its open sessions, and the
// query continues from it as if it had never been restarted.
func TestLegacyJSONStateLoads(t *testing.T) {
	legacy, err := os.ReadFile(filepath.Join("testdata", "state-json-v2"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{SessionGap: 30 * time.Minute, WatermarkDelay: 10 * time.Minute}
	h := newHarness(t, cfg)
	var want [][]sessionRow
	for i, batch := range timeline {
		rows, _ := h.run(h.p, -1, batch)
		want = append(want, rows)
		if i != 2 {
			continue
		}
		got, err := rebuild(2, legacy, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffState(h.p.state(), got); d != "" {
			t.Fatalf("JSON state 2: %s", d)
		}
	}

	up := newHarness(t, cfg)
	up.meta = h.meta
	if err := up.cp.SaveState(2, legacy); err != nil {
		t.Fatal(err)
	}
	for id := int64(3); id < int64(len(timeline)); id++ {
		if rows, _ := up.run(up.p, id, timeline[id]); !slices.Equal(rows, want[id]) {
			t.Errorf("batch %d after the upgrade: got %v, want %v", id, rows, want[id])
		}
	}
	b, err := up.cp.LoadState(3)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:4]) != stateMagic || b[4] != kindFull {
		t.Errorf("first state after the upgrade: starts %q, want a binary full snapshot", b[:5])
	}
	if d := diffState(h.p.state(), up.p.state()); d != "" {
		t.Errorf("state after the upgrade: %s", d)
	}
	if _, err := rebuild(2, legacy[:len(legacy)-2], nil); !errors.Is(err, ErrCorruptState) {
		t.Errorf("truncated JSON state: got %v, want ErrCorruptState", err)
	}
}

// NewQuery keeps MaxDeltaChain within half of RetainBatches, so that a
// checkpoint purge never removes the full snapshot a kept delta needs.
func TestNewQueryClampsDeltaChain(t *testing.T) {
	dir := t.TempDir()
	lake := silvertest.OpenLake(t, dir)
	defer lake.Close()
	for _, tc := range []struct{ retain, chain, want int }{{100, 0, DefaultMaxDeltaChain}, {30, 0, 15}, {30, 4, 4}, {1, 0, 1}} {
		cfg := stream.Config{DataDir: dir, RetainBatches: tc.retain, Logger: slog.New(slog.DiscardHandler)}
		_, p, err := NewQuery(lake, cfg, Config{MaxDeltaChain: tc.chain})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Config().MaxDeltaChain; got != tc.want {
			t.Errorf("RetainBatches %d, MaxDeltaChain %d: got %d, want %d", tc.retain, tc.chain, got, tc.want)
		}
	}
}

// A full snapshot in the "SES1" format (testdata, written by the code
// before held edits existed) loads with its open sessions, and the query
// continues from it as if it had never been restarted.
func TestSES1StateLoads(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "state-ses1"))
	if err != nil {
		t.Fatal(err)
	}
	if string(old[:4]) != magicV1 {
		t.Fatalf("testdata/state-ses1 starts %q, want %q", old[:4], magicV1)
	}
	cfg := Config{SessionGap: 30 * time.Minute, WatermarkDelay: 10 * time.Minute}
	h := newHarness(t, cfg)
	var want [][]sessionRow
	for i, batch := range timeline {
		rows, _ := h.run(h.p, -1, batch)
		want = append(want, rows)
		if i != 2 {
			continue
		}
		got, err := rebuild(2, old, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffState(h.p.state(), got); d != "" {
			t.Fatalf("SES1 state 2: %s", d)
		}
	}
	up := newHarness(t, cfg)
	up.meta = h.meta
	if err := up.cp.SaveState(2, old); err != nil {
		t.Fatal(err)
	}
	for id := int64(3); id < int64(len(timeline)); id++ {
		if rows, _ := up.run(up.p, id, timeline[id]); !slices.Equal(rows, want[id]) {
			t.Errorf("batch %d after the upgrade: got %v, want %v", id, rows, want[id])
		}
	}
	if d := diffState(h.p.state(), up.p.state()); d != "" {
		t.Errorf("state after the upgrade: %s", d)
	}
}
