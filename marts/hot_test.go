package marts

import (
	"context"
	"testing"
	"time"

	"lakehouse/table"
)

// TestHotPagesPruningKeepsTheTop: hot_pages built from the candidate pages
// only (hot_pages_cut.sql) equals hot_pages built from every edit, for both
// windows and a top_n of 1, 3 and 10, over 30,000 skewed edits across 26
// hours (edits before the day window too); and the pruned build did prune
// (fewer candidates than pages).
func TestHotPagesPruningKeepsTheTop(t *testing.T) {
	ctx := context.Background()
	lake := openTestLake(t, t.TempDir())
	g := newLateDayGen()
	const n = 30_000
	end := t0.Truncate(time.Hour).Add(37 * time.Minute)
	rs := make([]row, n)
	for i := range rs {
		rs[i] = g.edit(i, end.Add(-26*time.Hour+time.Duration(i)*(26*time.Hour/n)))
	}
	commit(t, lake, table.SilverEdits, "silver", 0, table.SilverEditsSchema, rs)
	f, err := lake.DataFiles(ctx, table.SilverEdits)
	if err != nil {
		t.Fatal(err)
	}
	d, err := openDuck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.attach(ctx, "silver.edits_recent", f); err != nil {
		t.Fatal(err)
	}
	var pages int64
	if err := d.db.QueryRowContext(ctx, `SELECT count(DISTINCT (wiki, title)) FROM silver.edits_recent`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	mt, _ := martOf(HotPages)
	q, err := mt.sql()
	if err != nil {
		t.Fatal(err)
	}
	build := func(topN, bound int, into string) (candidates int64) {
		t.Helper()
		if _, err := d.db.ExecContext(ctx, "SET VARIABLE top_n = ?", topN); err != nil {
			t.Fatal(err)
		}
		if _, err := d.db.ExecContext(ctx, "SET VARIABLE hot_max_candidates = ?", bound); err != nil {
			t.Fatal(err)
		}
		if err := prepareHotPages(ctx, d); err != nil {
			t.Fatal(err)
		}
		if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM hot_candidates`).Scan(&candidates); err != nil {
			t.Fatal(err)
		}
		if _, err := d.db.ExecContext(ctx, "CREATE OR REPLACE TABLE "+into+" AS "+q); err != nil {
			t.Fatal(err)
		}
		return candidates
	}
	for _, topN := range []int{1, 3, 10} {
		c := build(topN, defaultHotMaxCandidates, "pruned")
		build(topN, -1, "whole")
		if c == 0 || c >= pages {
			t.Fatalf("top %d: %d candidates of %d pages: inconclusive, nothing pruned", topN, c, pages)
		}
		var rows, onlyPruned, onlyWhole, hourRows int64
		if err := d.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM whole), (SELECT count(*) FROM (FROM pruned EXCEPT FROM whole)),
			(SELECT count(*) FROM (FROM whole EXCEPT FROM pruned)), (SELECT count(*) FROM whole WHERE time_window = 'last_hour')`).Scan(&rows, &onlyPruned, &onlyWhole, &hourRows); err != nil {
			t.Fatal(err)
		}
		if rows != int64(2*topN) || hourRows != int64(topN) {
			t.Fatalf("top %d: %d rows (%d of the last hour), want %d per window", topN, rows, hourRows, topN)
		}
		if onlyPruned != 0 || onlyWhole != 0 {
			t.Fatalf("top %d: pruned build (%d candidates of %d pages) differs from the whole: %d rows only in it, %d only in the whole",
				topN, c, pages, onlyPruned, onlyWhole)
		}
		t.Logf("top %d: %d candidate pages of %d", topN, c, pages)
	}
}
