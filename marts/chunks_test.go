package marts

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"lakehouse/table"
)

// TestChunkedRefreshEqualsWhole: with ChunkRows below an hour's edits,
// wiki_activity_hourly is built one hour per statement and the unique-id
// check counts the ids in several parts; the marts equal those of a
// refresh that groups everything at once, every check passes, and a
// duplicate is still found when its copies are counted in parts.
func TestChunkedRefreshEqualsWhole(t *testing.T) {
	ctx := context.Background()
	lake, log := fixtureLake(t)
	whole := New(lake, &log, Config{Logger: slog.New(slog.DiscardHandler), TopN: 4, ChunkRows: 1 << 40})
	if rep, err := whole.Refresh(ctx); err != nil || !rep.Passed() {
		t.Fatalf("whole refresh: %v %v", err, rep.Checks)
	}
	want := map[string]string{}
	for _, mt := range marts {
		want[mt.ident] = dumpTable(t, lake, mt.ident)
	}

	chunked := New(lake, &log, Config{Logger: slog.New(slog.DiscardHandler), TopN: 4, ChunkRows: 3})
	// The fixture's edits fall in three hours of 9, 6 and 5 edits: the
	// chunked build must take them one hour at a time (the whole one takes
	// the two adjacent hours together).
	for cfg, n := range map[*Marts]int{whole: 2, chunked: 3} {
		if got := len(hourChunksOf(t, cfg, lake)); got != n {
			t.Fatalf("ChunkRows %d: %d chunks, want %d", cfg.cfg.ChunkRows, got, n)
		}
	}
	// A rebuild: the lake records that the whole refresh built everything,
	// so a refresh would rebuild nothing.
	rep, err := chunked.Rebuild(ctx)
	if err != nil || !rep.Passed() {
		t.Fatalf("chunked refresh: %v %v", err, rep.Checks)
	}
	for _, c := range rep.Checks {
		if c.Name == CheckSilverUnique && c.Numbers["rows"] != int64(len(fixtureEdits())) {
			t.Fatalf("unique check counted %d rows in parts, want %d", c.Numbers["rows"], len(fixtureEdits()))
		}
	}
	for _, mt := range marts {
		if got := dumpTable(t, lake, mt.ident); got != want[mt.ident] {
			t.Errorf("%s built in chunks:\n%s\nwant:\n%s", mt.ident, got, want[mt.ident])
		}
	}

	dup := fixtureEdits()[3]
	commit(t, lake, table.SilverEdits, "silver", 2, table.SilverEditsSchema, []row{dup})
	rep, err = chunked.Refresh(ctx)
	if !errors.Is(err, ErrChecksFailed) {
		t.Fatalf("refresh after a duplicate: %v, want ErrChecksFailed", err)
	}
	for _, c := range rep.Checks {
		if c.Name == CheckSilverUnique && (c.Passed || c.Numbers["duplicate_rows"] != 1) {
			t.Errorf("unique check in parts: %v, want 1 duplicate row", c)
		}
	}
}

// hourChunksOf returns the hour chunks m's refresh would build
// wiki_activity_hourly in, over all of silver.edits (a full refresh).
func hourChunksOf(t *testing.T, m *Marts, lake *table.Lake) [][2]int64 {
	t.Helper()
	ctx := context.Background()
	d, err := m.openDuck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	files, err := lake.DataFiles(ctx, table.SilverEdits)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.attach(ctx, table.SilverEdits+"_hours", files); err != nil {
		t.Fatal(err)
	}
	chunks, err := d.unitChunks(ctx, hoursInScope, unitHour)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][2]int64, len(chunks))
	for i, c := range chunks {
		out[i] = [2]int64{c[0].Unix(), c[1].Unix()}
	}
	return out
}
