package marts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/broker"
	"lakehouse/table"
)

// TestPrintsRoundTrip: fingerprints survive encoding, units before 1970
// and far apart included, and a damaged encoding is refused.
func TestPrintsRoundTrip(t *testing.T) {
	for _, unit := range []time.Duration{unitHour, unitDay} {
		step := int64(unit / time.Second)
		p := prints{}
		for i, u := range []int64{-3, 0, 1, 2, 500, 501, 20_000} {
			p[u*step] = uint64(i)*0x9E3779B97F4A7C15 + 1
		}
		got, err := decodePrints(encodePrints(p, unit), unit)
		if err != nil || !maps.Equal(got, p) {
			t.Fatalf("unit %s: decoded %v (%v), want %v", unit, got, err, p)
		}
		if got, err := decodePrints(encodePrints(prints{}, unit), unit); err != nil || len(got) != 0 {
			t.Fatalf("empty: %v %v", got, err)
		}
		enc := encodePrints(p, unit)
		for _, bad := range []string{enc[:len(enc)-3], enc + "AAAA", "!!", ""} {
			if _, err := decodePrints(bad, unit); !errors.Is(err, errBadPrints) {
				t.Errorf("unit %s: %q decoded: %v, want errBadPrints", unit, bad, err)
			}
		}
	}
}

// TestCheckedRoundTrip: what the checks established reads back as it was
// written.
func TestCheckedRoundTrip(t *testing.T) {
	b := &bronzeSeen{table: "u-bronze", rows: 170, stats: map[int]offsetStat{0: {rows: 100, distinct: 100, min: 0, max: 99, held: 100}, 3: {rows: 70, distinct: 70, min: 5, max: 74, held: 70}}}
	ids := &seenFiles{table: "u-silver", files: map[uint64]bool{pathKey("/a.parquet"): true, pathKey("/b.parquet"): true}}
	props, err := checkedProps(b, ids)
	if err != nil {
		t.Fatal(err)
	}
	gb, gids, err := parseChecked(props)
	if err != nil {
		t.Fatal(err)
	}
	if gb.table != b.table || gb.rows != b.rows || !maps.Equal(gb.stats, b.stats) || gids.table != ids.table || !maps.Equal(gids.files, ids.files) {
		t.Fatalf("read back %+v %+v, want %+v %+v", gb, gids, b, ids)
	}
	if !gids.has("/a.parquet") || gids.has("/c.parquet") {
		t.Error("has: wrong membership")
	}
	none, _ := checkedProps(nil, nil)
	if gb, gids, err := parseChecked(none); err != nil || gb != nil || gids != nil {
		t.Fatalf("nothing established: %v %v %v", gb, gids, err)
	}
	if _, _, err := parseChecked(map[string]string{propChecked: `{"v":1,"ids":{"files":"!!"}}`}); err == nil {
		t.Error("a damaged file list was read")
	}
}

// TestRestartRefreshesWhatChanged: a new Marts over a lake an earlier one
// refreshed (a restart) rebuilds only the units that changed since, and
// its first checks count only the bronze rows and silver files added
// since; a record damaged or of a table created again costs a recount,
// and every answer equals a rebuild's.
func TestRestartRefreshesWhatChanged(t *testing.T) {
	lake := openTestLake(t, t.TempDir())
	h := &history{t: t, lake: lake, log: &fakeLog{}}
	log, add, refresh, check := h.log, h.add, h.refresh, h.check
	for d := range 5 {
		add(d, 40)
	}
	first := refresh("first process", New(lake, log, Config{Logger: slog.New(slog.DiscardHandler)}))
	if first.Scope != "full (no record of what it was built from)" {
		t.Fatalf("first refresh: scope %q", first.Scope)
	}

	add(4, 10) // the newest day grows while the appliance is down
	rep := refresh("restart", New(lake, log, Config{Logger: slog.New(slog.DiscardHandler)}))
	if rep.Scope != "1 edit days (1 hours), 0 session days" {
		t.Errorf("first refresh after a restart: scope %q, want the one day that changed", rep.Scope)
	}
	if c := check(rep, CheckBronzeOffsets); !strings.Contains(c.Message, "10 rows added since the last check") {
		t.Errorf("first offsets check after a restart: %s; want the 10 new rows read", c.Message)
	}
	if c := check(rep, CheckSilverUnique); c.Numbers["rows_checked_new"] != 10 {
		t.Errorf("first uniqueness check after a restart read %d rows of new files, want 10: %s", c.Numbers["rows_checked_new"], c.Message)
	}
	assertEqualsRebuild(t, lake, log)

	// A damaged record of the checks: the next process counts everything
	// again, and says so, rather than trust it.
	setProps(t, lake, OpsAssetChecks, map[string]string{propChecked: "{not json"})
	add(2, 3)
	rep = refresh("restart over a damaged record", New(lake, log, Config{Logger: slog.New(slog.DiscardHandler)}))
	if c := check(rep, CheckBronzeOffsets); !strings.Contains(c.Message, "every row counted") {
		t.Errorf("offsets check after a damaged record: %s; want every row counted", c.Message)
	}
	if c := check(rep, CheckSilverUnique); c.Numbers["rows_checked_new"] != c.Numbers["rows"] {
		t.Errorf("uniqueness check after a damaged record: %d of %d rows read as new; want all", c.Numbers["rows_checked_new"], c.Numbers["rows"])
	}
	if rep.Scope != "1 edit days (1 hours), 0 session days" {
		t.Errorf("scope after a damaged checks record: %q, want the one day", rep.Scope)
	}
	assertEqualsRebuild(t, lake, log)

	// A gold mart's record damaged: that mart alone is rebuilt whole.
	setProps(t, lake, WikiActivityHourly, map[string]string{propBuiltFrom: `{"v":1`})
	rep = refresh("restart over a damaged gold record", New(lake, log, Config{Logger: slog.New(slog.DiscardHandler)}))
	if !strings.HasPrefix(rep.Scope, "0 edit days (all hours (its record of what it was built from is unreadable") {
		t.Errorf("scope after a damaged hourly record: %q", rep.Scope)
	}
	assertEqualsRebuild(t, lake, log)
}

// TestMovedLakeKeepsWhatItKnew: a data directory moved (or restored from a
// backup elsewhere), its files now read from other paths, keeps what its
// marts and checks established: the first refresh after the move rebuilds
// the one day that changed and its checks read only what was added.
func TestMovedLakeKeepsWhatItKnew(t *testing.T) {
	root := t.TempDir()
	before, after := filepath.Join(root, "before"), filepath.Join(root, "after")
	h := &history{t: t, lake: openTestLake(t, before), log: &fakeLog{}}
	for d := range 4 {
		h.add(d, 30)
	}
	h.refresh("before the move", New(h.lake, h.log, Config{Logger: slog.New(slog.DiscardHandler)}))
	if err := h.lake.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(before, after); err != nil {
		t.Fatal(err)
	}
	h.lake = openTestLake(t, after)
	h.add(3, 7)
	rep := h.refresh("after the move", New(h.lake, h.log, Config{Logger: slog.New(slog.DiscardHandler)}))
	if rep.Scope != "1 edit days (1 hours), 0 session days" {
		t.Errorf("first refresh after the move: scope %q, want the one day that changed", rep.Scope)
	}
	if c := h.check(rep, CheckBronzeOffsets); !strings.Contains(c.Message, "7 rows added since the last check") {
		t.Errorf("offsets check after the move: %s; want the 7 new rows read", c.Message)
	}
	if c := h.check(rep, CheckSilverUnique); c.Numbers["rows_checked_new"] != 7 {
		t.Errorf("uniqueness check after the move read %d rows of new files, want 7: %s", c.Numbers["rows_checked_new"], c.Message)
	}
	assertEqualsRebuild(t, h.lake, h.log)
}

// history writes days of edits to silver and their raw events to bronze,
// one commit each, as the streams would, and refreshes.
type history struct {
	t                              *testing.T
	lake                           *table.Lake
	log                            *fakeLog
	silverBatch, bronzeBatch, next int64
}

func (h *history) add(day, n int) {
	t := h.t
	t.Helper()
	start := t0.Truncate(24 * time.Hour)
	h.silverBatch++
	var edits, bronze []row
	for i := range n {
		at := start.AddDate(0, 0, day).Add(time.Duration(i) * time.Minute)
		id := fmt.Sprintf("e-%06d", h.next)
		edits = append(edits, edit(id, at, fmt.Sprintf("wiki%d", i%3), "edit", fmt.Sprintf("P%d", i%11), fmt.Sprintf("U%d", i%7), false, int64(i)))
		bronze = append(bronze, bronzeRow(0, h.next, "edit", at))
		h.next++
	}
	commit(t, h.lake, table.SilverEdits, "silver", h.silverBatch, table.SilverEditsSchema, edits)
	commit(t, h.lake, table.Bronze, "bronze", h.bronzeBatch, table.BronzeSchema, bronze)
	h.bronzeBatch++
	h.log.offsets = []broker.PartitionOffsets{{Partition: 0, Start: 0, End: h.next}}
}

func (h *history) refresh(name string, m *Marts) Report {
	h.t.Helper()
	rep, err := m.Refresh(context.Background())
	if err != nil || !rep.Passed() {
		h.t.Fatalf("%s: %v %v", name, err, rep.Checks)
	}
	return rep
}

func (h *history) check(rep Report, name string) Check {
	h.t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	h.t.Fatalf("no check %s", name)
	return Check{}
}

// assertEqualsRebuild: every gold mart equals what a rebuild over all of
// history writes, and the rebuild's checks pass.
func assertEqualsRebuild(t *testing.T, lake *table.Lake, log *fakeLog) {
	t.Helper()
	before := map[string]string{}
	for _, id := range GoldTables {
		before[id] = dumpTable(t, lake, id)
	}
	rep, err := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler)}).Rebuild(context.Background())
	if err != nil || !rep.Passed() {
		t.Fatalf("rebuild: %v %v", err, rep.Checks)
	}
	for _, id := range GoldTables {
		if got := dumpTable(t, lake, id); got != before[id] {
			t.Errorf("%s after incremental refreshes:\n%s\nafter a rebuild:\n%s", id, before[id], got)
		}
	}
}

// setProps commits table properties to ident as another writer would.
func setProps(t *testing.T, lake *table.Lake, ident string, props map[string]string) {
	t.Helper()
	ctx := context.Background()
	i := strings.LastIndexByte(ident, '.')
	tbl, err := lake.Catalog().LoadTable(ctx, icetable.Identifier{ident[:i], ident[i+1:]})
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties(props)); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
