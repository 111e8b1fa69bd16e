package marts

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/table"
)

// TestRefreshSpillsUnderMemoryLimit: the marts and checks over a day of
// 100,000 edits (40 wikis, nearly every edit to another page, 50,000
// editors) run under a DuckDB memory_limit of 24MB, spilling to the temp
// directory instead of failing. Their SQL groups per editor (and per event
// id, per offset) instead of counting DISTINCT, and takes each window's hot
// pages with ORDER BY ... LIMIT: with count(DISTINCT) and a rank over
// every page, hot_pages failed here with "Out of Memory Error: could not
// allocate block" (DuckDB keeps DISTINCT sets in memory). A day of the
// real stream is about 1.7 million edits.
func TestRefreshSpillsUnderMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: commits 100,000 silver rows")
	}
	lake := openTestLake(t, t.TempDir())
	const rows, per = 100_000, 25_000
	start := t0.Truncate(24 * time.Hour)
	for b := range rows / per {
		rs := make([]row, per)
		for i := range rs {
			k := b*per + i
			at := start.Add(time.Duration(k) * (23 * time.Hour / rows))
			rs[i] = edit(fmt.Sprintf("id-%09d", k), at, fmt.Sprintf("wiki%d", k%40), "edit", fmt.Sprintf("Page %d", k%200_000),
				fmt.Sprintf("User%d", (k*7919)%50_000), k%5 == 0, int64(k%700-300))
		}
		commit(t, lake, table.SilverEdits, "silver", int64(b), table.SilverEditsSchema, rs)
	}
	// A spill directory whose parent does not exist yet, as <data>/tmp/duckdb
	// on a new data directory: DuckDB creates only the last element.
	m := New(lake, fakeLog{}, Config{Logger: slog.New(slog.DiscardHandler), DuckMemoryLimit: "24MB", DuckTempDir: filepath.Join(t.TempDir(), "tmp", "duckdb")})
	rep, err := m.Refresh(context.Background())
	if err != nil {
		t.Fatalf("refresh under a 24MB memory_limit: %v", err)
	}
	if got := rep.Rows[HotPages]; got == 0 {
		t.Fatalf("inconclusive: hot_pages has no rows (%v)", rep.Rows)
	}
	for _, c := range rep.Checks {
		if c.Name == CheckGoldReconciles && !c.Passed {
			t.Errorf("check %s failed: %s", c.Name, c.Message)
		}
	}
}

// TestRefreshSaysWhenTheSpillDirectoryCannotBeMade: a spill directory that
// cannot be created fails the refresh with an error naming it and the
// cause (Report.Err, which /readyz, status and the dashboard show), not a
// check that fails later or a count.
func TestRefreshSaysWhenTheSpillDirectoryCannotBeMade(t *testing.T) {
	lake, log := fixtureLake(t)
	file := filepath.Join(t.TempDir(), "tmp")
	if err := os.WriteFile(file, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "duckdb")
	m := New(lake, &log, Config{Logger: slog.New(slog.DiscardHandler), DuckTempDir: dir})
	rep, err := m.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("refresh with %s under a file: %v; want an error naming the directory and the cause", dir, err)
	}
	if rep.Err != err.Error() {
		t.Errorf("Report.Err %q, want the refresh's error %q", rep.Err, err)
	}
}
