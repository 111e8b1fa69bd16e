package marts

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"lakehouse/table"
)

// TestSilverUniqueCheckIncremental: after a passing check, the uniqueness
// check counts only the rows of files it has not covered (the numbers show
// it: rows_checked_new), and still finds an appended id that repeats one
// of a covered file, and one that repeats within the new files; a
// compaction, whose new file repeats the rows of the files it replaced,
// is no duplicate.
func TestSilverUniqueCheckIncremental(t *testing.T) {
	ctx := context.Background()
	lake, log := fixtureLake(t)
	m := New(lake, &log, Config{Logger: slog.New(slog.DiscardHandler), TopN: 4})
	batch := int64(1)
	appendEdits := func(ids ...string) {
		t.Helper()
		batch++
		rows := make([]row, len(ids))
		for i, id := range ids {
			rows[i] = edit(id, t0.Add(time.Duration(30+i)*time.Minute), "enwiki", "edit", "Go", "Carol", false, 10)
		}
		commit(t, lake, table.SilverEdits, "silver", batch, table.SilverEditsSchema, rows)
	}
	unique := func(name string, wantErr bool) Check {
		t.Helper()
		rep, err := m.Refresh(ctx)
		if got := errors.Is(err, ErrChecksFailed); got != wantErr || err != nil && !got {
			t.Fatalf("%s: refresh: %v (checks %v)", name, err, rep.Checks)
		}
		for _, c := range rep.Checks {
			if c.Name == CheckSilverUnique {
				t.Logf("%s: %v", name, c)
				return c
			}
		}
		t.Fatalf("%s: no uniqueness check in %v", name, rep.Checks)
		return Check{}
	}
	first := unique("first", false)
	total := first.Numbers["rows"]
	if first.Numbers["rows_checked_new"] != total || total == 0 {
		t.Fatalf("first check: %v, want every row counted", first)
	}
	appendEdits("u-1", "u-2", "u-3")
	c := unique("append", false)
	if c.Numbers["rows_checked_new"] != 3 || c.Numbers["rows"] <= 3 {
		t.Fatalf("after an append of 3 rows: %v, want 3 rows checked of the day's rows", c)
	}
	res, err := lake.Compact(ctx, table.SilverEdits, table.CompactPolicy{TargetBytes: 64 << 20, FanIn: 2, ColdAfter: time.Hour, Now: t0.Add(72 * time.Hour)})
	if err != nil || res.RowsMoved == 0 {
		t.Fatalf("inconclusive: the compaction moved no rows (%+v, %v)", res, err)
	}
	c = unique("compaction", false)
	if c.Numbers["rows_checked_new"] == 0 || c.Numbers["duplicate_rows"] != 0 {
		t.Fatalf("after a compaction: %v, want its rows checked, no duplicate", c)
	}
	dup := fixtureEdits()[3]["event_id"].(string)
	appendEdits("u-4", dup)
	c = unique("an id of a covered file again", true)
	if c.Passed || c.Numbers["duplicate_rows"] != 1 || c.Numbers["rows_checked_new"] != 2 {
		t.Fatalf("an appended copy of %s: %v, want 1 duplicate among 2 rows checked", dup, c)
	}
	// After a failed check nothing counts as covered: the next check counts
	// the day again, and the duplicate is still there.
	appendEdits("u-5")
	c = unique("after a failure", true)
	if c.Numbers["duplicate_rows"] != 1 || c.Numbers["rows_checked_new"] != c.Numbers["rows"] {
		t.Fatalf("after a failed check: %v, want every row counted, the duplicate found", c)
	}
	// A clean lake again, then a duplicate within the new rows only.
	lake2, log2 := fixtureLake(t)
	m = New(lake2, &log2, Config{Logger: slog.New(slog.DiscardHandler), TopN: 4})
	lake = lake2
	unique("first", false)
	appendEdits("w-1", "w-2", "w-1")
	c = unique("twice in new rows", true)
	if c.Numbers["duplicate_rows"] != 1 || c.Numbers["rows_checked_new"] != 3 {
		t.Fatalf("an id twice among the appended rows: %v, want 1 duplicate among 3 rows checked", c)
	}
}
