package marts

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table"
)

// TestIncrementalRefreshEqualsFull: a Marts that refreshes after every
// change of silver, rebuilding only the days that changed, writes the same
// four gold tables as a full rebuild from scratch over an identical lake,
// through appends to the newest day, a late edit into an old day, sessions,
// a compaction, a retention delete that drops a day, and a gold table
// written by someone else. The scope each refresh reports shows the
// incremental path ran (a test where every refresh was full would prove
// nothing), and every check passes on both.
func TestIncrementalRefreshEqualsFull(t *testing.T) {
	ctx := context.Background()
	inc, ref := openTestLake(t, t.TempDir()), openTestLake(t, t.TempDir())
	m := New(inc, fakeLog{}, Config{Logger: slog.New(slog.DiscardHandler)})
	var silverBatch, sessBatch int64
	day := func(d int, h int) time.Time {
		return t0.Truncate(24*time.Hour).AddDate(0, 0, d).Add(time.Duration(h) * time.Hour)
	}
	edits := func(at time.Time, n int) {
		silverBatch++
		rows := make([]row, n)
		for i := range rows {
			k := int(silverBatch)*1000 + i
			rows[i] = edit(fmt.Sprintf("e%07d", k), at.Add(time.Duration(i)*time.Second), fmt.Sprintf("wiki%d", k%3), []string{"edit", "new"}[k%2],
				fmt.Sprintf("Page %d", k%7), fmt.Sprintf("User%d", k%5), k%4 == 0, int64(k%90-40))
		}
		for _, l := range []*table.Lake{inc, ref} {
			commit(t, l, table.SilverEdits, "silver", silverBatch, table.SilverEditsSchema, rows)
		}
	}
	sessions := func(startMin ...int) {
		sessBatch++
		var rows []row
		for i, s := range startMin {
			rows = append(rows, session(fmt.Sprintf("s%d-%d", sessBatch, i), "wiki1", fmt.Sprintf("User%d", i), i%2 == 0, s, 60*(i+1), int64(i+1), 1, 10, 2))
		}
		for _, l := range []*table.Lake{inc, ref} {
			commit(t, l, table.EditorSessions, "sessions", sessBatch, table.EditorSessionsSchema, rows)
		}
	}
	both := func(f func(l *table.Lake) error) {
		for _, l := range []*table.Lake{inc, ref} {
			if err := f(l); err != nil {
				t.Fatal(err)
			}
		}
	}
	step := func(name, wantScope string) {
		t.Helper()
		rep, err := m.Refresh(ctx)
		if err == nil && rep.Err != "" {
			t.Fatalf("%s: refresh without an error reports one: %s", name, rep.Err)
		}
		if err != nil {
			t.Fatalf("%s: incremental refresh: %v", name, err)
		}
		if !strings.HasPrefix(rep.Scope, wantScope) {
			t.Fatalf("%s: refresh scope %q, want %q", name, rep.Scope, wantScope)
		}
		full, err := New(ref, fakeLog{}, Config{Logger: slog.New(slog.DiscardHandler)}).Rebuild(ctx)
		if err != nil {
			t.Fatalf("%s: full refresh: %v", name, err)
		}
		if full.Scope != "full (a rebuild was asked for)" {
			t.Fatalf("%s: a rebuild refreshed with scope %q, want full", name, full.Scope)
		}
		for _, id := range GoldTables {
			got, want := dumpTable(t, inc, id), dumpTable(t, ref, id)
			if got != want {
				t.Fatalf("%s: %s after an incremental refresh (scope %s):\n%s\nafter a full one:\n%s", name, id, rep.Scope, got, want)
			}
		}
		t.Logf("%s: scope %s, rows %v", name, rep.Scope, rep.Rows)
	}

	edits(day(0, 10), 40)
	edits(day(1, 9), 40)
	sessions(0, 30, 60*24)
	step("first", "full (no record of what it was built from)")
	edits(day(1, 11), 30)
	step("append to the newest day", "1 edit days (1 hours), 0 session days")
	step("nothing new", "0 edit days (0 hours), 0 session days")
	edits(day(0, 23), 5) // a late edit into the old day, and one into the next
	edits(day(1, 23).Add(59*time.Minute+50*time.Second), 20)
	sessions(60*24 + 5)
	step("late edits over three days", "3 edit days (3 hours), 1 session days")
	both(func(l *table.Lake) error {
		res, err := l.Compact(ctx, table.SilverEdits, table.CompactPolicy{TargetBytes: 64 << 20, FanIn: 8, ColdAfter: time.Hour, Now: day(5, 0)})
		if err == nil && res.RowsMoved == 0 {
			err = fmt.Errorf("inconclusive: the compaction moved no rows")
		}
		return err
	})
	step("compaction rewrites the closed days", "2 edit days (")
	both(func(l *table.Lake) error {
		_, err := l.DeleteBefore(ctx, table.SilverEdits, "event_time", day(1, 0))
		return err
	})
	step("retention drops day 0", "1 edit days (")
	if n := strings.Count(dumpTable(t, inc, TopEditorsDaily), day(0, 0).Format(time.DateOnly)); n != 0 {
		t.Fatalf("top_editors_daily still has %d rows of the day retention deleted", n)
	}
	// A restart: a new Marts knows what the lake recorded, not nothing.
	m = New(inc, fakeLog{}, Config{Logger: slog.New(slog.DiscardHandler)})
	edits(day(2, 1), 10)
	step("a new process", "1 edit days (1 hours), 0 session days")
	step("a new process, nothing new", "0 edit days (0 hours), 0 session days")
	// Another engine appends a row to a gold table: the next refresh must
	// not trust that mart's record of its days, and only that mart's.
	appendExternally(t, inc, TopEditorsDaily, row{"day": day(2, 0), "wiki": "wiki9", "user": "Mallory", "bot": false, "rank": int32(1), "edits": int64(999), "bytes_changed": int64(1)})
	edits(day(2, 2), 5)
	step("gold appended to by another engine", "all edit days (its rows changed since it recorded what it was built from (another writer)) (1 hours), 0 session days")
	// A writer through this package's Overwrite without a record of its
	// own: the record it replaced does not describe its rows.
	top, _ := martOf(TopEditorsDaily)
	if err := inc.Overwrite(ctx, TopEditorsDaily, top.schema, nil, nil); err != nil {
		t.Fatal(err)
	}
	edits(day(2, 3), 5)
	step("gold overwritten without a record", "all edit days (no record of what it was built from) (1 hours), 0 session days")
}

// appendExternally appends r to ident through iceberg-go alone, as another
// engine writing to the lake would.
func appendExternally(t *testing.T, lake *table.Lake, ident string, r row) {
	t.Helper()
	ctx := context.Background()
	mt, _ := martOf(ident)
	rec := recordOf(t, mt.schema, []row{r})
	defer rec.Release()
	tbl, err := lake.Catalog().LoadTable(ctx, icetable.Identifier{"gold", strings.TrimPrefix(ident, "gold.")})
	if err != nil {
		t.Fatal(err)
	}
	at := array.NewTableFromRecords(mt.schema, []arrow.RecordBatch{rec})
	defer at.Release()
	txn := tbl.NewTransaction()
	if err := txn.AppendTable(ctx, at, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// dumpTable renders every row of ident, sorted, as CSV.
func dumpTable(t *testing.T, lake *table.Lake, ident string) string {
	t.Helper()
	var b strings.Builder
	if err := Query(context.Background(), lake, "SELECT * FROM "+ident+" ORDER BY ALL", FormatCSV, &b, QueryOptions{}); err != nil {
		t.Fatalf("dump %s: %v", ident, err)
	}
	return b.String()
}
