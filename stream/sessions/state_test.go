package sessions

import (
	"context"
	"fmt"
	"log/slog"
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
		if !slices.Equal(ge.Held, we.Held) {
			return fmt.Sprintf("editor %q: held edits: got %v, want %v", k, ge.Held, we.Held)
		}
		if ge.Wiki != we.Wiki || ge.User != we.User || len(ge.Sessions) != len(we.Sessions) {
			return fmt.Sprintf("editor %q: got %s/%s with %d sessions, want %s/%s with %d",
				k, ge.Wiki, ge.User, len(ge.Sessions), we.Wiki, we.User, len(we.Sessions))
		}
		for i, w := range we.Sessions {
			g := ge.Sessions[i]
			if g.Start != w.Start || g.End != w.End || g.Edits != w.Edits || g.Added != w.Added ||
				g.Removed != w.Removed || g.Bot != w.Bot || !g.Pages.equal(&w.Pages) {
				return fmt.Sprintf("editor %q session %d: got %+v, want %+v", k, i, *g, *w)
			}
		}
	}
	return ""
}

// refModel is the sessions definition, computed the slow way: it keeps
// every on-time edit and, at each batch, walks each editor's edits in event
// time (a new session after a gap over g or once the session would last
// over max), emitting the sessions the watermark closed that it has not
// emitted yet. The property test checks the processor's output against it.
type refModel struct {
	max     int64
	eds     map[string][]edit
	emitted map[string]sessionRow
	merge   int // adds that bridged two runs of edits more than the gap apart
	splits  int // sessions started by the maximum length, emitted
}

func newRefModel(max time.Duration) *refModel {
	m := &refModel{max: Config{MaxSessionLength: max}.withDefaults().maxLength(),
		eds: map[string][]edit{}, emitted: map[string]sessionRow{}}
	return m
}

func (m *refModel) add(e edit, g int64) {
	k := editorKey(e.Wiki, e.User)
	es := m.eds[k]
	i := sort.Search(len(es), func(i int) bool { return es[i].At > e.At })
	if i > 0 && i < len(es) && e.At-es[i-1].At <= g && es[i].At-e.At <= g && es[i].At-es[i-1].At > g {
		m.merge++
	}
	m.eds[k] = slices.Insert(es, i, e)
}

// walk returns the editor's sessions, and for each whether the maximum
// started it.
func (m *refModel) walk(es []edit, g int64) ([]sessionRow, []bool) {
	var out []sessionRow
	var split []bool
	var pages map[string]bool
	for _, e := range es {
		n := len(out) - 1
		if n < 0 || e.At-out[n].End.UnixMicro() > g || e.At-out[n].Start.UnixMicro() > m.max {
			split = append(split, n >= 0 && e.At-out[n].End.UnixMicro() <= g)
			t := time.UnixMicro(e.At).UTC()
			out = append(out, sessionRow{ID: sessionID(e.Wiki, e.User, e.At), Wiki: e.Wiki, User: e.User, Start: t})
			pages = map[string]bool{}
			n++
		}
		s := &out[n]
		s.End = time.UnixMicro(e.At).UTC()
		s.Edits++
		s.Bot = s.Bot || e.Bot
		if e.Delta > 0 {
			s.Added += e.Delta
		} else {
			s.Removed -= e.Delta
		}
		pages[e.Title] = true
		s.Pages = int64(len(pages))
	}
	return out, split
}

func (m *refModel) close(t *testing.T, wm, g int64) []sessionRow {
	var out []sessionRow
	for _, es := range m.eds {
		rows, split := m.walk(es, g)
		for i, r := range rows {
			if old, ok := m.emitted[r.ID]; ok {
				if old != r {
					t.Fatalf("reference: emitted session %+v became %+v", old, r)
				}
				continue
			}
			if wm != noTime && r.End.UnixMicro()+g < wm {
				m.emitted[r.ID] = r
				out = append(out, r)
				if split[i] {
					m.splits++
				}
			}
		}
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
		max   time.Duration // 0: the default; negative: none
	}{
		{1, 10 * time.Minute, 0}, {3, time.Hour, 0}, {20, 10 * time.Minute, 0}, {20, time.Hour, 0},
		{1, 10 * time.Minute, 45 * time.Minute}, {3, time.Hour, 90 * time.Minute}, {20, 10 * time.Minute, 45 * time.Minute},
		{20, time.Hour, 61 * time.Minute}, {3, time.Hour, -1},
	} {
		chain := tc.chain
		t.Run(fmt.Sprintf("chain=%d/delay=%s/max=%s", chain, tc.delay, tc.max), func(t *testing.T) {
			cfg := Config{SessionGap: gap, WatermarkDelay: tc.delay, MaxDeltaChain: chain, MaxSessionLength: tc.max}
			h := newHarness(t, cfg)
			ref := newRefModel(tc.max)
			var emitted, late, fulls, replays, held int
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
				for ed := range h.p.state().holding {
					if ed.d != nil {
						held += len(ed.d.newHeld)
					}
				}
				if want := ref.close(t, wm, gap.Microseconds()); !slices.Equal(rows, want) {
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
					cfg.Logger = slog.New(slog.DiscardHandler)
					fresh := NewProcessor(cfg)
					again, dropped2 := h.run(fresh, id, edits)
					if !slices.Equal(again, rows) || dropped2 != dropped {
						t.Fatalf("batch %d replay: got %v (late %d), want %v (late %d)", n, again, dropped2, rows, dropped)
					}
					if d := diffState(h.p.state(), fresh.state()); d != "" {
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
			t.Logf("%d batches: %d sessions emitted (%d split at the maximum), %d merges, %d late, %d edits held back, %d full snapshots, %d replays",
				batches, emitted, ref.splits, ref.merge, late, held, fulls, replays)
			if emitted < 50 || ref.merge < 20 || late < 50 {
				t.Errorf("scenario too tame: %d sessions, %d merges, %d late; want >= 50, 20, 50", emitted, ref.merge, late)
			}
			if tc.max > 0 && (ref.splits < 10 || held < 50) {
				t.Errorf("scenario too tame for the maximum: %d sessions split, %d edits held back; want >= 10, 50", ref.splits, held)
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
	if d := diffState(h.p.state(), got); d != "" {
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
	if h.p.state() != nil {
		t.Fatalf("batch %d: partial state kept after a failed Process", id)
	}
}

// equal reports (for diffState) whether p and q hold the same ids.
func (p *pageSet) equal(q *pageSet) bool {
	if p.len() != q.len() {
		return false
	}
	in := map[pageID]bool{}
	for id := range q.all() {
		in[id] = true
	}
	for id := range p.all() {
		if !in[id] {
			return false
		}
	}
	return true
}
