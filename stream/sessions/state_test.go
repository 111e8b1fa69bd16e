package sessions

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/stream"
)

// diffState returns how got differs from want ("" if it does not): the
// same version, event time, watermark, editors, sessions, scalars and pages.
func diffState(want, got *state) string {
	if want.Version != got.Version || want.MaxEvent != got.MaxEvent || want.Watermark != got.Watermark {
		return fmt.Sprintf("header: got version %d max %d wm %d, want %d %d %d",
			got.Version, got.MaxEvent, got.Watermark, want.Version, want.MaxEvent, want.Watermark)
	}
	if a, b := slices.Sorted(maps.Keys(want.Editors)), slices.Sorted(maps.Keys(got.Editors)); !slices.Equal(a, b) {
		return fmt.Sprintf("editors: got %q, want %q", b, a)
	}
	for k, we := range want.Editors {
		ge := got.Editors[k]
		if ge.Wiki != we.Wiki || ge.User != we.User || len(ge.Sessions) != len(we.Sessions) {
			return fmt.Sprintf("editor %q: got %s/%s with %d sessions, want %s/%s with %d",
				k, ge.Wiki, ge.User, len(ge.Sessions), we.Wiki, we.User, len(we.Sessions))
		}
		for i, w := range we.Sessions {
			g := ge.Sessions[i]
			if g.Start != w.Start || g.End != w.End || g.Edits != w.Edits || g.Added != w.Added ||
				g.Removed != w.Removed || g.Bot != w.Bot || !maps.Equal(g.Pages, w.Pages) {
				return fmt.Sprintf("editor %q session %d: got %+v, want %+v", k, i, *g, *w)
			}
		}
	}
	return ""
}

// refModel is the sessions algorithm as it was before add worked in place:
// every matching session copied into a new one. The property test checks
// the processor's output against it.
type refModel struct {
	eds   map[string][]*refSession
	merge int // adds that bridged two or more sessions
}

type refSession struct {
	wiki, user                        string
	start, end, edits, added, removed int64
	bot                               bool
	pages                             map[string]bool
}

func (m *refModel) add(e edit, g int64) {
	k := editorKey(e.Wiki, e.User)
	n := &refSession{wiki: e.Wiki, user: e.User, start: e.At, end: e.At, edits: 1, bot: e.Bot, pages: map[string]bool{e.Title: true}}
	if e.Delta > 0 {
		n.added = e.Delta
	} else {
		n.removed = -e.Delta
	}
	var kept []*refSession
	merged := 0
	for _, o := range m.eds[k] {
		if o.start-g <= e.At && e.At <= o.end+g {
			n.start, n.end = min(n.start, o.start), max(n.end, o.end)
			n.edits, n.added, n.removed, n.bot = n.edits+o.edits, n.added+o.added, n.removed+o.removed, n.bot || o.bot
			maps.Copy(n.pages, o.pages)
			merged++
			continue
		}
		kept = append(kept, o)
	}
	if merged > 1 {
		m.merge++
	}
	m.eds[k] = append(kept, n)
	sort.Slice(m.eds[k], func(i, j int) bool { return m.eds[k][i].start < m.eds[k][j].start })
}

func (m *refModel) close(wm, g int64) []sessionRow {
	var out []sessionRow
	for k, ss := range m.eds {
		var kept []*refSession
		for _, s := range ss {
			if wm != noTime && s.end+g < wm {
				out = append(out, sessionRow{ID: sessionID(s.wiki, s.user, s.start), Wiki: s.wiki, User: s.user, Bot: s.bot,
					Start: time.UnixMicro(s.start).UTC(), End: time.UnixMicro(s.end).UTC(), Edits: s.edits,
					Pages: int64(len(s.pages)), Added: s.added, Removed: s.removed})
				continue
			}
			kept = append(kept, s)
		}
		m.eds[k] = kept
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		if a.Wiki != b.Wiki {
			return a.Wiki < b.Wiki
		}
		return a.User < b.User
	})
	return out
}

// randomBatches makes n batches of edits by a rotating few of ten editors:
// edits out of order within a batch (so one can bridge two sessions), one
// in eight up to two hours back (late, or extending a session backwards),
// time jumping between batches so sessions close.
func randomBatches(seed uint64, n int) [][]edit {
	rng := rand.New(rand.NewPCG(seed, 1))
	now := t0
	var out [][]edit
	for b := 0; b < n; b++ {
		now = now.Add(time.Duration(rng.IntN(40*60)) * time.Second)
		var batch []edit
		for i := rng.IntN(10); i > 0; i-- {
			ed := (b/30 + rng.IntN(4)) % 10
			at := now.Add(time.Duration(rng.IntN(45*60)-5*60) * time.Second)
			if rng.IntN(8) == 0 {
				at = now.Add(-time.Duration(rng.IntN(2*3600)) * time.Second) // late for a delay under 2h
			}
			batch = append(batch, edit{Wiki: []string{"enwiki", "dewiki"}[ed%2], User: fmt.Sprintf("U%d", ed/2),
				Title: fmt.Sprintf("P%d", rng.IntN(60)), Bot: rng.IntN(8) == 0, At: at.UnixMicro(), Delta: int64(rng.IntN(200) - 100)})
		}
		out = append(out, batch)
	}
	return out
}

// badRecord is a silver batch the processor refuses (no title column).
func badRecord() arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{{Name: "wiki", Type: arrow.BinaryTypes.String}}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	return rb.NewRecordBatch()
}

// A few hundred random batches: after each, state N rebuilt from the files
// the processor saved (the last full snapshot and the deltas after it)
// equals the in-memory state, the output equals the reference model's, a
// re-run of N from state N-1 gives the same output and state, and a batch
// abandoned half-way leaves nothing behind.
func TestStateRebuildProperty(t *testing.T) {
	const gap, batches = 30 * time.Minute, 300
	for _, tc := range []struct {
		chain int
		delay time.Duration // longer: more edits extend a session backwards
	}{{1, 10 * time.Minute}, {3, time.Hour}, {20, 10 * time.Minute}, {20, time.Hour}} {
		chain := tc.chain
		t.Run(fmt.Sprintf("chain=%d/delay=%s", chain, tc.delay), func(t *testing.T) {
			cfg := Config{SessionGap: gap, WatermarkDelay: tc.delay, MaxDeltaChain: chain}
			h := newHarness(t, cfg)
			ref := &refModel{eds: map[string][]*refSession{}}
			var emitted, late, fulls, replays int
			lastFull := int64(-1)
			for n, edits := range randomBatches(uint64(chain)+uint64(tc.delay), batches) {
				id := int64(n)
				if n%7 == 3 {
					abandonBatch(t, h, id, edits)
				}
				rows, dropped := h.run(h.p, -1, edits)
				meta, err := ParseMeta(h.meta[id])
				if err != nil {
					t.Fatal(err)
				}
				wm := meta.WatermarkMicros()
				for _, e := range edits {
					if wm == noTime || e.At >= wm {
						ref.add(e, gap.Microseconds())
					}
				}
				if want := ref.close(wm, gap.Microseconds()); !slices.Equal(rows, want) {
					t.Fatalf("batch %d: got %v, want (reference) %v", n, rows, want)
				}
				emitted, late = emitted+len(rows), late+int(dropped)
				if kind := checkRebuild(t, h, id); kind == kindFull {
					fulls, lastFull = fulls+1, id
				}
				if id-lastFull >= int64(chain) {
					t.Fatalf("batch %d: state saved as a delta %d versions after the last full snapshot, chain %d", n, id-lastFull, chain)
				}
				if n%5 == 4 {
					fresh := NewProcessor(Config{SessionGap: gap, WatermarkDelay: tc.delay, MaxDeltaChain: chain, Logger: quietLogger()}, h.cp)
					again, dropped2 := h.run(fresh, id, edits)
					if !slices.Equal(again, rows) || dropped2 != dropped {
						t.Fatalf("batch %d replay: got %v (late %d), want %v (late %d)", n, again, dropped2, rows, dropped)
					}
					if d := diffState(h.p.st, fresh.st); d != "" {
						t.Fatalf("batch %d replay: state: %s", n, d)
					}
					checkRebuild(t, h, id)
					h.p = fresh
					replays++
				}
				if keep := id - int64(2*chain) + 1; keep > 0 && id%10 == 0 {
					if err := h.cp.Purge(keep); err != nil { // as the runner does, RetainBatches 2*chain
						t.Fatal(err)
					}
				}
			}
			t.Logf("%d batches: %d sessions emitted, %d merges, %d late, %d full snapshots, %d replays",
				batches, emitted, ref.merge, late, fulls, replays)
			if emitted < 50 || ref.merge < 20 || late < 50 {
				t.Errorf("scenario too tame: %d sessions, %d merges, %d late; want >= 50, 20, 50", emitted, ref.merge, late)
			}
		})
	}
}

// checkRebuild rebuilds state id from the checkpoint's files alone and
// compares it with the processor's; it returns the kind of file id.
func checkRebuild(t *testing.T, h *harness, id int64) byte {
	t.Helper()
	got, err := rebuild(id, nil, h.cp.LoadState)
	if err != nil {
		t.Fatalf("rebuild state %d: %v", id, err)
	}
	if d := diffState(h.p.st, got); d != "" {
		t.Fatalf("state %d rebuilt from the checkpoint: %s", id, d)
	}
	b, err := h.cp.LoadState(id)
	if err != nil {
		t.Fatal(err)
	}
	return b[4]
}

// abandonBatch runs batch id with a good record followed by a bad one, as a
// batch that fails after changing the state: Process must fail and drop
// the partial state.
func abandonBatch(t *testing.T, h *harness, id int64, edits []edit) {
	t.Helper()
	ctx := context.Background()
	b := stream.Batch{Query: QueryName, QueryID: "q", ID: id}
	meta, err := h.p.PlanMeta(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	b.Meta = meta
	if _, err := h.p.Process(ctx, b, []arrow.RecordBatch{silverRecord(t, edits), badRecord()}); err == nil {
		t.Fatalf("batch %d with a bad record: no error", id)
	}
	if h.p.st != nil {
		t.Fatalf("batch %d: partial state kept after a failed Process", id)
	}
}
