package marts

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/table"
)

// TestBronzeOffsetsCheckIncremental: after a passing check, the offsets
// check reads only what bronze added beyond it, and still fails on a hole
// at the edge, a duplicate of an offset it had already counted, and rows
// beyond the broker's end, by counting every row again.
func TestBronzeOffsetsCheckIncremental(t *testing.T) {
	rows := func(offs ...int64) []row { return offsetRows(offs) }
	span := func(from, to int64) []int64 {
		var out []int64
		for o := from; o < to; o++ {
			out = append(out, o)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		add     []int64 // committed after two passing checks (offsets 0..149)
		end     int64
		problem string // "" = passes incrementally
	}{
		{"appends", span(150, 170), 170, ""},
		{"hole at the edge", span(151, 170), 170, "1 missing offsets"},
		{"duplicate below the last check", append(span(150, 160), 20), 160, "1 duplicate offsets"},
		{"beyond the broker's end", span(150, 170), 165, "beyond broker end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lake := openTestLake(t, t.TempDir())
			log := fakeLog{offsets: []broker.PartitionOffsets{{Partition: 0, Start: 0, End: 100}}}
			m := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler)})
			check := func() Check { t.Helper(); return offsetsCheck(t, m) }
			commit(t, lake, table.Bronze, "bronze", 0, table.BronzeSchema, rows(span(0, 100)...))
			if c := check(); !c.Passed || !strings.Contains(c.Message, "every row counted") {
				t.Fatalf("first check: %s; want a pass counting every row", c)
			}
			commit(t, lake, table.Bronze, "bronze", 1, table.BronzeSchema, rows(span(100, 150)...))
			log.offsets[0].End = 150
			if c := check(); !c.Passed || !strings.Contains(c.Message, "50 rows added since the last check") {
				t.Fatalf("second check: %s; want a pass reading the 50 new rows only", c)
			}
			commit(t, lake, table.Bronze, "bronze", 2, table.BronzeSchema, rows(tc.add...))
			log.offsets[0].End = tc.end
			c := check()
			if tc.problem == "" {
				if !c.Passed || !strings.Contains(c.Message, "20 rows added since the last check") || c.Numbers["bronze_rows"] != 170 {
					t.Fatalf("third check: %s (%v); want a pass over 170 rows reading the 20 new", c, c.Numbers)
				}
				return
			}
			if c.Passed || !strings.Contains(c.Message, tc.problem) {
				t.Fatalf("third check: %s; want a failure naming %q", c, tc.problem)
			}
			if c := check(); c.Passed {
				t.Fatalf("the check after a failure passed: %s", c)
			}
		})
	}
}

// TestAttachBronzePrunesOldFiles: after a passing offsets check the bronze
// view the checks read names only the files that may hold newer offsets
// (on S3 each file in a view is copied to local disk first); the whole
// list is kept for a check that must count every row.
func TestAttachBronzePrunesOldFiles(t *testing.T) {
	ctx := context.Background()
	lake := openTestLake(t, t.TempDir())
	log := fakeLog{offsets: []broker.PartitionOffsets{{Partition: 0, Start: 0, End: 100}}}
	m := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler)})
	var rs []row
	for o := int64(0); o < 100; o++ {
		rs = append(rs, bronzeRow(0, o, "edit", t0.Add(time.Duration(o)*time.Second)))
	}
	commit(t, lake, table.Bronze, "bronze", 0, table.BronzeSchema, rs[:60])
	commit(t, lake, table.Bronze, "bronze", 1, table.BronzeSchema, rs[60:])
	cs, _ := m.Check(ctx) // silver is empty here: only the offsets check matters
	if len(cs) < 2 || cs[1].Name != CheckBronzeOffsets || !cs[1].Passed {
		t.Fatalf("first check: %v", cs)
	}
	var more []row
	for o := int64(100); o < 120; o++ {
		more = append(more, bronzeRow(0, o, "edit", t0.Add(time.Duration(o)*time.Second)))
	}
	commit(t, lake, table.Bronze, "bronze", 2, table.BronzeSchema, more)
	all, err := lake.DataFiles(ctx, table.Bronze)
	if err != nil || len(all.Paths) < 3 {
		t.Fatalf("bronze files: %v %v; want 3 or more", all.Paths, err)
	}
	d, err := openDuck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	viewFiles := func() int {
		var sql string
		if err := d.db.QueryRowContext(ctx, `SELECT sql FROM duckdb_views() WHERE schema_name = 'bronze' AND view_name = 'recentchange'`).Scan(&sql); err != nil {
			t.Fatal(err)
		}
		return strings.Count(sql, ".parquet'")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.attachBronze(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got := viewFiles(); got != 1 || d.rows[table.Bronze] != 120 {
		t.Errorf("after a passing check the view names %d files (rows %d), want the 1 new file (and the table's 120 rows)", got, d.rows[table.Bronze])
	}
	if err := m.attachAllBronze(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got := viewFiles(); got != len(all.Paths) {
		t.Errorf("for a full count the view names %d files, want all %d", got, len(all.Paths))
	}
}

// offsetRows are bronze edit rows of partition 0 at offs, each offset's
// event time t0 plus that many seconds.
func offsetRows(offs []int64) []row {
	var out []row
	for _, o := range offs {
		out = append(out, bronzeRow(0, o, "edit", t0.Add(time.Duration(o)*time.Second)))
	}
	return out
}

// offsetsCheck runs m's checks and returns the bronze offsets check.
func offsetsCheck(t *testing.T, m *Marts) Check {
	t.Helper()
	cs, _ := m.Check(context.Background())
	for _, c := range cs {
		if c.Name == CheckBronzeOffsets {
			return c
		}
	}
	t.Fatalf("no %s among %v", CheckBronzeOffsets, cs)
	return Check{}
}
