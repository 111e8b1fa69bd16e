package sessions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"lakehouse/stream"
)

// ses2Config and ses2Batches are the scenario testdata/state-ses2 was saved
// from (by the code before page ids, commit 7a48cb3): a bot editing every
// five minutes for ten hours, every pair of edits swapped (each second edit
// five minutes late), one edit per batch, beside a human editing a few
// pages; with a 4-hour maximum the bot's edits are held back near it, and
// with a delta chain of 4 the files are full snapshots and deltas.
var ses2Config = Config{SessionGap: 30 * time.Minute, WatermarkDelay: 10 * time.Minute,
	MaxSessionLength: 4 * time.Hour, MaxDeltaChain: 4}

func ses2Batches() [][]edit {
	var out [][]edit
	for m := 0; m <= 600; m += 10 {
		a := edit{Wiki: "wikidatawiki", User: "TirelessBot", Title: fmt.Sprintf("Q%d", m%50), Bot: true,
			At: t0.Add(time.Duration(m+5) * time.Minute).UnixMicro(), Delta: int64(m%7 - 3)}
		b := a
		b.Title, b.At, b.Delta = fmt.Sprintf("Q%d", (m+5)%50), t0.Add(time.Duration(m)*time.Minute).UnixMicro(), 2
		out = append(out, []edit{a}, []edit{b})
		if m%40 == 0 {
			out = append(out, []edit{{Wiki: "enwiki", User: "Ann", Title: fmt.Sprintf("Übersicht %d", m%3),
				At: t0.Add(time.Duration(m+1) * time.Minute).UnixMicro(), Delta: -7}})
		}
	}
	flush := edit{Wiki: "enwiki", User: "Later", Title: "F", At: t0.Add(20 * time.Hour).UnixMicro(), Delta: 1}
	return append(out, []edit{flush}, []edit{flush})
}

// ses2Version is the state version the fixture holds: the files from the
// last full snapshot at or before it (56) up to it (57, a delta), with the
// bot holding edits.
const ses2Version = 57

// A state saved in the "SES2" format (titles instead of page ids) rebuilds
// from its full snapshot and delta into the state the current code has at
// that version, a delta of the current format then applies on top of the
// old files, and the query continues as if it had never been restarted.
func TestSES2StateLoads(t *testing.T) {
	dir := filepath.Join("testdata", "state-ses2")
	old := func(v int64) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, strconv.FormatInt(v, 10)))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("fixture %d: %w", v, stream.ErrNoEntry)
		}
		return b, err
	}
	for v, kind := range map[int64]byte{ses2Version - 1: kindFull, ses2Version: kindDelta} {
		b, err := old(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b[:4]) != magicV2 || b[4] != kind {
			t.Fatalf("fixture %d starts %q kind %d, want %q kind %d", v, b[:4], b[4], magicV2, kind)
		}
	}

	batches := ses2Batches()
	h := newHarness(t, ses2Config)
	var want [][]sessionRow
	for i, b := range batches {
		rows, _ := h.run(h.p, -1, b)
		want = append(want, rows)
		if i != ses2Version {
			continue
		}
		if len(h.p.state().holding) == 0 {
			t.Fatalf("state %d holds no edits: the scenario no longer covers held edits", i)
		}
		got, err := rebuild(ses2Version, nil, old)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffState(h.p.state(), got); d != "" {
			t.Fatalf("SES2 state %d: %s", ses2Version, d)
		}
	}

	up := newHarness(t, ses2Config)
	up.meta = h.meta
	for v := int64(ses2Version - 1); v <= ses2Version; v++ {
		b, _ := old(v)
		if err := up.cp.SaveState(v, b); err != nil {
			t.Fatal(err)
		}
	}
	up.p.f.cfg.MaxDeltaChain = 100 // the next states are deltas on top of the SES2 files
	up.next = ses2Version + 1
	for id := int64(ses2Version + 1); id < int64(len(batches)); id++ {
		if rows, _ := up.run(up.p, id, batches[id]); !slices.Equal(rows, want[id]) {
			t.Errorf("batch %d after the upgrade: got %v, want %v", id, rows, want[id])
		}
		if id == ses2Version+1 {
			b, err := up.cp.LoadState(id)
			if err != nil {
				t.Fatal(err)
			}
			if string(b[:4]) != stateMagic || b[4] != kindDelta {
				t.Errorf("first state after the upgrade: starts %q kind %d, want %q, a delta", b[:4], b[4], stateMagic)
			}
			// A fresh processor rebuilds the mixed chain when the next batch loads state id.
			up.p = NewProcessor(ses2Config)
		}
	}
	if d := diffState(h.p.state(), up.p.state()); d != "" {
		t.Errorf("state after the upgrade: %s", d)
	}
}
