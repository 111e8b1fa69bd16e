package marts

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"lakehouse/table"
)

// benchLake holds 20,000 silver edits (10 batches) and 100 sessions.
func benchLake(b *testing.B) *table.Lake {
	lake := openTestLake(b, b.TempDir())
	for batch := int64(0); batch < 10; batch++ {
		commit(b, lake, table.SilverEdits, "silver", batch, table.SilverEditsSchema, streamBatch(batch, 2000))
	}
	var ss []row
	for i := 0; i < 100; i++ {
		ss = append(ss, session("s"+string(rune('a'+i%26))+string(rune('a'+i/26)), "enwiki", "U", i%4 == 0, i, i*7, int64(i%9+1), 1, 10, 0))
	}
	commit(b, lake, table.EditorSessions, "sessions", 0, table.EditorSessionsSchema, ss)
	return lake
}

// BenchmarkRefresh: rebuild and write the four marts, run and record the
// checks, over 20,000 silver edits.
func BenchmarkRefresh(b *testing.B) {
	benchRefresh(b, benchLake(b), 20000)
}

// benchRefresh times Refresh over lake, which holds silverRows edits.
func benchRefresh(b *testing.B, lake *table.Lake, silverRows int) {
	m := New(lake, fakeLog{}, Config{Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(silverRows)*float64(b.N)/b.Elapsed().Seconds(), "silver_rows/s")
}

// BenchmarkQuery: an aggregate over 20,000 silver edits, printed as a table.
func BenchmarkQuery(b *testing.B) {
	lake := benchLake(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if err := Query(ctx, lake, `SELECT wiki, title, count(*) AS n FROM silver.edits GROUP BY ALL ORDER BY n DESC`, FormatTable, io.Discard, QueryOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRefreshLakeSize: one Refresh over silver tables of 100,000 and
// 1,000,000 edits (about 1.3 and 13 hours of the real stream: the soak
// lands about 77,000 silver rows an hour), spread over 40 wikis, 50,000
// pages and 20,000 editors. The marts and the checks read all of silver,
// so the time grows with the lake. Every iteration after the first is a
// refresh with nothing new (BenchmarkRefreshAfterAppend measures the
// incremental refresh a running appliance does).
func BenchmarkRefreshLakeSize(b *testing.B) {
	for _, rows := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("silver_rows=%d", rows), func(b *testing.B) {
			lake := openTestLake(b, b.TempDir())
			const per = 20_000
			for batch := range int64(rows / per) {
				rs := make([]row, per)
				for i := range rs {
					k := int(batch)*per + i
					at := t0.Add(time.Duration(k) * 28 * time.Millisecond) // 35 edits/s
					rs[i] = edit(fmt.Sprintf("id-%09d", k), at, fmt.Sprintf("wiki%d", k%40), "edit", fmt.Sprintf("Page %d", k%50_000),
						fmt.Sprintf("User%d", (k*7919)%20_000), k%5 == 0, int64(k%700-300))
				}
				commit(b, lake, table.SilverEdits, "silver", batch, table.SilverEditsSchema, rs)
			}
			benchRefresh(b, lake, rows)
		})
	}
}

// BenchmarkRefreshAfterAppend: the refresh a running appliance does, over
// a silver table of 1,000,000 edits spread over four days (250,000 a day):
// each iteration commits 5,000 edits to the newest day (about 4 minutes of
// the real stream) and refreshes. mode=incremental keeps one Marts, which
// rebuilds only the newest day (and hot_pages from the last day of files);
// mode=full refreshes with a new Marts each time, which rebuilds all four
// days, as every refresh did before.
//
// mode=models is incremental with the two example models of
// docs/models.md (six in all): the target is at most 1.5 times
// mode=incremental.
func BenchmarkRefreshAfterAppend(b *testing.B) {
	for _, mode := range []string{"incremental", "full", "models"} {
		b.Run("mode="+mode, func(b *testing.B) {
			lake := openTestLake(b, b.TempDir())
			const days, perDay, per = 4, 250_000, 25_000
			start := t0.Truncate(24 * time.Hour)
			batch := int64(0)
			add := func(k0, n int, at func(k int) time.Time) {
				rs := make([]row, n)
				for i := range rs {
					k := k0 + i
					rs[i] = edit(fmt.Sprintf("id-%09d", k), at(k), fmt.Sprintf("wiki%d", k%40), "edit", fmt.Sprintf("Page %d", k%50_000),
						fmt.Sprintf("User%d", (k*7919)%20_000), k%5 == 0, int64(k%700-300))
				}
				commit(b, lake, table.SilverEdits, "silver", batch, table.SilverEditsSchema, rs)
				batch++
			}
			spacing := 24 * time.Hour / perDay
			for k := 0; k < days*perDay; k += per {
				add(k, per, func(k int) time.Time { return start.Add(time.Duration(k) * spacing) })
			}
			ctx := context.Background()
			cfg := Config{Logger: slog.New(slog.DiscardHandler)}
			if mode == "models" {
				cfg.Models = docModels(b)
			}
			m := New(lake, fakeLog{}, cfg)
			if _, err := m.Refresh(ctx); err != nil {
				b.Fatal(err)
			}
			next := days * perDay
			last := start.Add(time.Duration(next-1) * spacing) // the newest day is day 4: keep adding within it
			b.ResetTimer()
			for b.Loop() {
				add(next, 5_000, func(k int) time.Time { return last.Add(-time.Duration(next+5_000-k) * time.Millisecond) })
				next += 5_000
				refresh := m.Refresh
				if mode == "full" {
					refresh = m.Rebuild
				}
				rep, err := refresh(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if want := map[string]bool{"incremental": false, "full": true}[mode]; strings.HasPrefix(rep.Scope, "full") != want {
					b.Fatalf("scope %q in mode %s", rep.Scope, mode)
				}
				if mode == "models" && (len(rep.Models) != 2 || rep.Models[0].Scope != "1 hour" || rep.Models[1].Scope != "1 day") {
					b.Fatalf("models rebuilt %+v, want the newest hour and day", rep.Models)
				}
			}
		})
	}
}
