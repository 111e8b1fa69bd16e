package marts

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"lakehouse/internal/procmem"
	"lakehouse/table"
)

// BenchmarkRefreshLateInTheDay: the refresh a running appliance does late
// in a UTC day of the real stream: about 1.9 million silver edits in that
// day (300 wikis, skewed; about 580,000 pages, 150,000 editors), in 40
// files, plus 250,000 sessions. Setup builds the lake and runs the first
// (full) Refresh; each iteration appends 5,000 edits to the same day (about
// four minutes of the stream) and refreshes, which rebuilds that day. It
// reports the process's peak RSS above the RSS before the Refresh
// (VmHWM, reset before each), which is what DuckDB and the refresh add to
// the appliance's footprint, for the full refresh and the incremental
// ones. Building the lake takes a minute or two:
//
//	go test ./marts -run '^$' -bench RefreshLateInTheDay -benchtime 3x -cpu 1
func BenchmarkRefreshLateInTheDay(b *testing.B) {
	ctx := context.Background()
	start := t0.Truncate(24 * time.Hour)
	const total, per = 1_900_000, 47_500
	spacing := (24*time.Hour - 10*time.Minute) / total // the day's last 10 minutes are for the appends
	g := newLateDayGen()
	lake := openTestLake(b, b.TempDir())
	for batch := range total / per {
		rs := make([]row, per)
		for i := range rs {
			k := batch*per + i
			rs[i] = g.edit(k, start.Add(time.Duration(k)*spacing))
		}
		commit(b, lake, table.SilverEdits, "silver", int64(batch), table.SilverEditsSchema, rs)
	}
	const sessions, sper = 250_000, 25_000
	for batch := range sessions / sper {
		rs := make([]row, sper)
		for i := range rs {
			rs[i] = g.session(batch*sper+i, start.Add(time.Duration(batch*sper+i)*(24*time.Hour/sessions)))
		}
		commit(b, lake, table.EditorSessions, "sessions", int64(batch), table.EditorSessionsSchema, rs)
	}
	m := New(lake, fakeLog{}, Config{Logger: slog.New(slog.DiscardHandler), DuckTempDir: b.TempDir()})
	refresh := func(what string) (peakMiB float64) {
		before := procmem.Self("VmRSS")
		procmem.ResetPeak()
		rep, err := m.Refresh(ctx)
		if err != nil || !rep.Passed() {
			b.Fatalf("%s refresh: %v %v", what, err, rep.Checks)
		}
		return float64(procmem.Self("VmHWM")-before) / (1 << 20)
	}
	full := refresh("full")
	next, last, batch := total, start.Add(time.Duration(total-1)*spacing), int64(total/per)
	var peak float64
	b.ResetTimer()
	for b.Loop() {
		rs := make([]row, 5_000)
		for i := range rs {
			rs[i] = g.edit(next+i, last.Add(time.Duration(next-total+i+1)*45*time.Millisecond))
		}
		commit(b, lake, table.SilverEdits, "silver", batch, table.SilverEditsSchema, rs)
		next, batch = next+len(rs), batch+1
		peak = max(peak, refresh("incremental"))
	}
	b.ReportMetric(full, "full_rss_peak_MiB")
	b.ReportMetric(peak, "rss_peak_MiB")
}

// lateDayGen draws edits with the real stream's skew, deterministically.
type lateDayGen struct {
	r        *rand.Rand
	wikiCum  []float64 // cumulative share of the 300 wikis
	wikiPool []int     // pages per wiki
	hot      *rand.Zipf
	active   *rand.Zipf
}

// newLateDayGen is seeded: every run draws the same day.
func newLateDayGen() *lateDayGen {
	r := rand.New(rand.NewPCG(1, 2))
	g := &lateDayGen{r: r, hot: rand.NewZipf(r, 1.1, 1, 49_999), active: rand.NewZipf(r, 1.05, 1, 19_999)}
	const wikis = 300
	var sum float64
	w := make([]float64, wikis)
	for i := range w {
		w[i] = 1 / math.Pow(float64(i+1), 1.1)
		sum += w[i]
	}
	acc := 0.0
	for i := range w {
		acc += w[i] / sum
		g.wikiCum = append(g.wikiCum, acc)
		g.wikiPool = append(g.wikiPool, max(200, int(700_000*w[i]/sum)))
	}
	return g
}

// wiki draws a wiki by its share of the stream.
func (g *lateDayGen) wiki() int {
	u := g.r.Float64()
	lo, hi := 0, len(g.wikiCum)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if g.wikiCum[mid] < u {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// user picks an editor: 30 % of edits by 300 bots, the rest by humans (half
// from 20,000 active ones, half from a pool of 150,000). An editor's home
// wiki is a function of the name; 90 % of its edits are there.
func (g *lateDayGen) user() (name string, bot bool, home int) {
	var id int
	switch u := g.r.Float64(); {
	case u < 0.3:
		id = -1 - g.r.IntN(300)
		bot = true
	case u < 0.65:
		id = int(g.active.Uint64())
	default:
		id = g.r.IntN(150_000)
	}
	h := uint64(id+1000) * 0x9E3779B97F4A7C15
	home = int(h >> 33 % 300)
	// homes follow the wiki skew too
	if (h>>20)%100 < 80 {
		home = g.wikiFromHash(h)
	}
	if bot {
		return fmt.Sprintf("ExampleBot %d", -id), true, home
	}
	return fmt.Sprintf("Editor name %d", id), false, home
}

// wikiFromHash maps a hash to a wiki by the same shares.
func (g *lateDayGen) wikiFromHash(h uint64) int {
	u := float64(h%1_000_003) / 1_000_003
	for i, c := range g.wikiCum {
		if u <= c {
			return i
		}
	}
	return len(g.wikiCum) - 1
}

// edit is silver edit k at at.
func (g *lateDayGen) edit(k int, at time.Time) row {
	user, bot, w := g.user()
	if g.r.Float64() < 0.1 {
		w = g.wiki()
	}
	pool := g.wikiPool[w]
	var p int
	if g.r.Float64() < 0.3 {
		p = int(g.hot.Uint64()) % pool
	} else {
		p = g.r.IntN(pool)
	}
	typ := "edit"
	if g.r.IntN(20) == 0 {
		typ = "new"
	}
	wiki := "wiki" + strconv.Itoa(w) + "wiki"
	if w == 0 {
		wiki = "wikidatawiki"
	}
	id := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", g.r.Uint32(), g.r.Uint32()&0xffff, k&0xffff, g.r.Uint32()&0xffff, g.r.Uint64()&0xffffffffffff)
	r := edit(id, at, wiki, typ, fmt.Sprintf("Some page title %d", p), user, bot, int64(g.r.NormFloat64()*400))
	r["src_offset"] = int64(k)
	return r
}

// session is session k starting at at.
func (g *lateDayGen) session(k int, at time.Time) row {
	user, bot, w := g.user()
	n := int64(1 + g.r.IntN(12))
	length := time.Duration(g.r.IntN(3600)) * time.Second
	return row{"session_id": fmt.Sprintf("sess-%09d", k), "wiki": "wiki" + strconv.Itoa(w) + "wiki", "user": user, "bot": bot,
		"session_start": at, "session_end": at.Add(length), "edits": n, "pages": 1 + n/2,
		"bytes_added": int64(g.r.IntN(5000)), "bytes_removed": int64(g.r.IntN(500)), "processed_time": at.Add(time.Hour)}
}
