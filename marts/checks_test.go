package marts

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/table"
)

// TestChecksFailWhenBroken breaks each check's invariant on purpose, on top
// of the fixture (on which every check passes), and requires that exact
// check to fail with the numbers that show why, and the failure to be
// recorded in ops.asset_checks.
func TestChecksFailWhenBroken(t *testing.T) {
	cases := []struct {
		name    string
		check   string
		breakIt func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog)
		rebuild bool // Refresh (rebuild gold) rather than Check only
		number  string
		want    int64
	}{
		{"duplicate silver row", CheckSilverUnique, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			dup := fixtureEdits()[3]
			commit(t, lake, table.SilverEdits, "silver", 2, table.SilverEditsSchema, []row{dup})
		}, true, "duplicate_rows", 1},
		{"missing bronze offset", CheckBronzeOffsets, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			// offsets 20 and 22 land, 21 never does; the broker has 0..22.
			commit(t, lake, table.Bronze, "bronze", 1, table.BronzeSchema,
				[]row{bronzeRow(0, 20, "edit", t0), bronzeRow(0, 22, "edit", t0)})
			log.offsets = []broker.PartitionOffsets{{Partition: 0, Start: 0, End: 23}}
		}, false, "missing_offsets", 1},
		{"duplicate bronze offset", CheckBronzeOffsets, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			commit(t, lake, table.Bronze, "bronze", 1, table.BronzeSchema, []row{bronzeRow(0, 5, "edit", t0)})
		}, false, "duplicate_offsets", 1},
		{"bronze beyond broker end", CheckBronzeOffsets, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			log.offsets = []broker.PartitionOffsets{{Partition: 0, Start: 0, End: 18}}
		}, false, "offsets_beyond_end", 2},
		{"bronze skipped the broker's first offsets", CheckBronzeOffsets, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			log.offsets = []broker.PartitionOffsets{{Partition: 0, Start: 0, End: 20}, {Partition: 1, Start: 0, End: 3}}
			commit(t, lake, table.Bronze, "bronze", 1, table.BronzeSchema, []row{bronzeRow(1, 2, "edit", t0)})
		}, false, "missing_offsets", 2},
		{"wrong hourly total", CheckGoldReconciles, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			overwriteGold(t, lake, WikiActivityHourly, "UPDATE t SET edits = edits + 1 WHERE wiki = 'dewiki' AND hour = (SELECT min(hour) FROM t)")
		}, false, "hourly_edits_gold", 21},
		{"wrong session total", CheckGoldReconciles, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			overwriteGold(t, lake, EditorSessionsDaily, "DELETE FROM t WHERE day = DATE '2026-02-27'")
		}, false, "sessions_daily_sessions_gold", 5},
		{"wrong top editor", CheckGoldReconciles, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			overwriteGold(t, lake, TopEditorsDaily, "UPDATE t SET edits = 99 WHERE rank = 1 AND wiki = 'dewiki' AND day = DATE '2026-02-27'")
		}, false, "top_editors_rank1_edits_gold", 108},
		{"wrong hot page", CheckGoldReconciles, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			overwriteGold(t, lake, HotPages, "UPDATE t SET edits = edits + 5 WHERE rank = 1 AND time_window = 'last_hour'")
		}, false, "hot_pages_edits_gold", 27},
		{"stale silver", CheckSilverFresh, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			late := fixtureEdits()[19]["event_time"].(time.Time).Add(time.Hour)
			commit(t, lake, table.Bronze, "bronze", 1, table.BronzeSchema, []row{bronzeRow(0, 20, "edit", late)})
			log.offsets = []broker.PartitionOffsets{{Partition: 0, Start: 0, End: 21}}
		}, false, "lag_s", 3600},
		{"silver drops everything as late", CheckStreamsProgress, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			// A watermark moved far ahead by one bad event: every later
			// edit is late; bronze goes on as normal.
			commit(t, lake, table.StreamProgress, "progress", 0, table.StreamProgressSchema, []row{
				progressRow("bronze", 7, t0, 150, 150, 0, 0), progressRow("silver", 7, t0, 150, 0, 120, 0),
				progressRow("bronze", 8, t0.Add(time.Second), 150, 150, 0, 0), progressRow("silver", 8, t0.Add(time.Second), 150, 2, 118, 0),
			})
		}, false, "silver_dropped", 238},
		{"sessions stopped with input waiting", CheckStreamsProgress, func(t *testing.T, lake *table.Lake, m *Marts, log *fakeLog) {
			commit(t, lake, table.StreamProgress, "progress", 0, table.StreamProgressSchema, []row{
				progressRow("sessions", 3, t0, 40, 1, 0, 25),
				progressRow("bronze", 90, t0.Add(20*time.Minute), 10, 10, 0, 0), progressRow("silver", 90, t0.Add(20*time.Minute), 10, 10, 0, 0),
			})
		}, false, "sessions_behind_newest_s", 1200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			lake, log := fixtureLake(t)
			m := New(lake, &log, Config{Logger: slog.New(slog.DiscardHandler), TopN: 4})
			rep, err := m.Refresh(ctx)
			if err != nil || !rep.Passed() {
				t.Fatalf("baseline refresh: %v %v", err, rep.Checks)
			}
			tc.breakIt(t, lake, m, &log)
			var checks []Check
			if tc.rebuild {
				rep, err = m.Refresh(ctx)
				checks = rep.Checks
			} else {
				checks, err = m.Check(ctx)
			}
			if !errors.Is(err, ErrChecksFailed) {
				t.Fatalf("got error %v, want ErrChecksFailed", err)
			}
			for _, c := range checks {
				if c.Name != tc.check {
					if !c.Passed && c.Name != CheckSilverFresh {
						t.Errorf("unrelated check failed too: %v", c)
					}
					continue
				}
				if c.Passed {
					t.Fatalf("%s passed after breaking it: %v", c.Name, c)
				}
				if got := c.Numbers[tc.number]; got != tc.want {
					t.Errorf("%s %s: got %d, want %d (%v)", c.Name, tc.number, got, tc.want, c)
				}
			}
			var out bytes.Buffer
			q := "SELECT count(*) FROM ops.asset_checks WHERE check_name = '" + tc.check + "' AND NOT passed"
			if err := Query(ctx, lake, q, FormatCSV, &out, QueryOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(strings.Split(out.String(), "\n")[1]); got != "1" {
				t.Errorf("recorded failures of %s: got %s, want 1", tc.check, got)
			}
		})
	}
}

// overwriteGold rewrites a gold table after applying a DuckDB statement to a
// copy of it named t: a mart that no longer matches silver.
func overwriteGold(t *testing.T, lake *table.Lake, ident, stmt string) {
	t.Helper()
	ctx := context.Background()
	d, err := openDuck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.attachFromLake(ctx, lake, ident); err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.ExecContext(ctx, "CREATE TABLE t AS SELECT * FROM "+ident); err != nil {
		t.Fatal(err)
	}
	if _, err := d.db.ExecContext(ctx, stmt); err != nil {
		t.Fatal(err)
	}
	sc, _ := GoldSchema(ident)
	rows, err := d.db.QueryContext(ctx, "SELECT * FROM t")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := rowsToRecords(rows, sc)
	rows.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.Overwrite(ctx, ident, sc, recs, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
}

// TestCheckWithoutBroker: the offsets check cannot pass without a broker.
func TestCheckWithoutBroker(t *testing.T) {
	lake, _ := fixtureLake(t)
	m := New(lake, nil, Config{Logger: slog.New(slog.DiscardHandler)})
	checks, err := m.Check(context.Background())
	if !errors.Is(err, ErrChecksFailed) {
		t.Fatalf("got %v, want ErrChecksFailed", err)
	}
	for _, c := range checks {
		if c.Name == CheckBronzeOffsets && (c.Passed || !strings.Contains(c.Message, "no broker")) {
			t.Errorf("offsets check without a broker: got %v, want a failure naming the broker", c)
		}
	}
}

// progressRow is one ops.stream_progress row of query's batch: rows in and
// out, rows dropped as late, and the lag the batch left.
func progressRow(query string, batch int64, started time.Time, in, out, late, lag int64) row {
	return row{"query": query, "query_id": query + "-id", "batch_id": batch, "started": started, "duration_ms": int64(5),
		"commit_ms": int64(2), "rows_in": in, "rows_out": out, "rows_dropped_by_watermark": late, "duplicates_dropped": int64(0),
		"unparseable": int64(0), "end_offsets": "{}", "lag": lag, "query_id_changes": int64(0)}
}
