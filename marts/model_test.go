package marts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lakehouse/table"
)

const modelByType = `-- Edits per UTC day, wiki and type.
-- @model gold.edits_by_type_daily
-- @unit day(day)
-- @key day, wiki, type
-- @check accepted_values(type, 'edit', 'new', 'log', 'categorize')
-- @check row_count_between(1, 1000)
-- @check reconciles(sum(edits), silver.edits, count(*))
SELECT CAST(event_time AS DATE) AS day, wiki, type, count(*) AS edits, sum(byte_delta) AS bytes
FROM silver.edits
GROUP BY ALL
`

const modelPerWiki = `-- @model gold.wiki_edits_daily
-- @unit day(day)
-- @key day, wiki
-- @check reconciles(sum(edits), gold.edits_by_type_daily, sum(edits))
SELECT day, wiki, sum(edits) AS edits
FROM edits_by_type_daily
GROUP BY ALL;
`

// writeModels writes name -> text into a new directory and loads it.
func writeModels(t testing.TB, dir string, files map[string]string) []Model {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ms, errs, err := LoadModels(dir)
	if err != nil || len(errs) > 0 {
		t.Fatalf("load models: %v %v", err, errs)
	}
	return ms
}

// queryCSV runs sql over lake and returns its CSV.
func queryCSV(t *testing.T, lake *table.Lake, sql string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Query(context.Background(), lake, sql, FormatCSV, &buf, QueryOptions{TempDir: t.TempDir()}); err != nil {
		t.Fatalf("query %s: %v", sql, err)
	}
	return buf.String()
}

// TestUserModelsIncremental: a model over silver and one over that model
// are built in order, hold what their SQL gives over all of silver, are
// rebuilt only in the days an append touched (the scope each refresh
// reports, and the other day's rows untouched), pass their checks, and
// are dropped (table and files) once their files are removed.
func TestUserModelsIncremental(t *testing.T) {
	ctx := context.Background()
	lake, log := fixtureLake(t)
	dir := t.TempDir()
	models := writeModels(t, dir, map[string]string{"by_type.sql": modelByType, "per_wiki.sql": modelPerWiki})
	cfg := Config{Logger: slog.New(slog.DiscardHandler), Models: models}
	m := New(lake, log, cfg)
	expectByType := "SELECT CAST(event_time AS DATE) AS day, wiki, type, count(*) AS edits, sum(byte_delta) AS bytes FROM silver.edits GROUP BY ALL ORDER BY ALL"
	expectPerWiki := "SELECT CAST(event_time AS DATE) AS day, wiki, count(*) AS edits FROM silver.edits GROUP BY ALL ORDER BY ALL"
	same := func(step string) {
		t.Helper()
		for model, want := range map[string]string{"gold.edits_by_type_daily": expectByType, "gold.wiki_edits_daily": expectPerWiki} {
			got := queryCSV(t, lake, "SELECT * FROM "+model+" ORDER BY ALL")
			if exp := queryCSV(t, lake, want); got != exp {
				t.Fatalf("%s: %s holds\n%s\nwant\n%s", step, model, got, exp)
			}
		}
	}
	scopes := func(rep Report) []string {
		var out []string
		for _, md := range rep.Models {
			out = append(out, md.Ident+" "+md.Scope)
		}
		return out
	}
	refresh := func(step string, want ...string) Report {
		t.Helper()
		rep, err := m.Refresh(ctx)
		if err != nil {
			t.Fatalf("%s: refresh: %v\n%v", step, err, rep.Checks)
		}
		if got := scopes(rep); !slices.Equal(got, want) {
			t.Fatalf("%s: models rebuilt %q, want %q", step, got, want)
		}
		n := 0
		for _, c := range rep.Checks {
			if c.Asset == "gold.edits_by_type_daily" || c.Asset == "gold.wiki_edits_daily" {
				n++
			}
		}
		if n != 8 { // 3 + 2 of the key; 1 + 2 of the key
			t.Fatalf("%s: %d model checks, want 8: %v", step, n, rep.Checks)
		}
		return rep
	}
	refresh("first", "gold.edits_by_type_daily all (no record of what it was built from)",
		"gold.wiki_edits_daily all (no record of what it was built from)")
	same("first")
	refresh("nothing changed", "gold.edits_by_type_daily 0 days", "gold.wiki_edits_daily 0 days")

	// An edit on a new day: one day rebuilt, the others kept.
	before, err := lake.DataFiles(ctx, "gold.edits_by_type_daily")
	if err != nil {
		t.Fatal(err)
	}
	late := edit("ev-late", t0.Add(72*time.Hour), "enwiki", "new", "Late", "Eve", false, 10)
	commit(t, lake, table.SilverEdits, "silver", 2, table.SilverEditsSchema, []row{late})
	refresh("append", "gold.edits_by_type_daily 1 day", "gold.wiki_edits_daily 1 day")
	same("append")
	after, err := lake.DataFiles(ctx, "gold.edits_by_type_daily")
	if err != nil {
		t.Fatal(err)
	}
	if after.SnapshotID == before.SnapshotID {
		t.Fatal("the model was not written after the append")
	}

	// The model over the model is gone with its file; the other stays.
	modelDir := filepath.Join(lake.Warehouse(), "gold.db", "wiki_edits_daily")
	if _, err := os.Stat(modelDir); err != nil {
		t.Fatalf("the model's files are not where the test looks: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "per_wiki.sql")); err != nil {
		t.Fatal(err)
	}
	ms, _, err := LoadModels(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Models = ms
	m = New(lake, log, cfg)
	rep, err := m.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := scopes(rep); !slices.Equal(got, []string{"gold.edits_by_type_daily 0 days"}) {
		t.Fatalf("after the removal: %q", got)
	}
	tables, err := lake.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(tables, "gold.wiki_edits_daily") || !slices.Contains(tables, "gold.edits_by_type_daily") {
		t.Fatalf("tables after the removal: %v", tables)
	}
	if _, err := os.Stat(modelDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dropped model's files are still there: %v", err)
	}
}

// TestBadModelsRefused: each broken model is refused with its file, the
// line where known and the rule; the good model beside them is built and
// no table of a refused one is written.
func TestBadModelsRefused(t *testing.T) {
	ctx := context.Background()
	lake, log := fixtureLake(t)
	cases := []struct {
		file, text string
		line       int
		rule       string
		has        string
	}{
		{"syntax.sql", "-- @unit table\nSELECT wiki,\n  count(*) FORM silver.edits\n", 3, RuleSyntax, "syntax error"},
		{"nosuch.sql", "SELECT *\nFROM silver.nothing\n", 2, RuleInput, "silver.nothing"},
		{"column.sql", "-- @unit table\nSELECT wiki,\n  no_such_column\nFROM silver.edits\n", 3, RuleColumns, "no_such_column"},
		{"write.sql", "-- @unit table\nDELETE FROM silver.edits\n", 0, RuleSelect, "DELETE"},
		{"two.sql", "SELECT 1 AS a; SELECT 2 AS b;\n", 0, RuleSelect, "2 statements"},
		{"csv.sql", "SELECT *\nFROM read_csv('/etc/passwd')\n", 2, RuleInput, "read_csv"},
		{"cycle_a.sql", "SELECT * FROM gold.cycle_b\n", 0, RuleCycle, "gold.cycle_a -> gold.cycle_b -> gold.cycle_a"},
		{"cycle_b.sql", "SELECT * FROM gold.cycle_a\n", 0, RuleInput, "refused"},
		{"unitcol.sql", "-- @unit day(day)\nSELECT wiki, count(*) AS n FROM silver.edits GROUP BY ALL\n", 1, RuleUnit, "no column day"},
		{"checkcol.sql", "-- @unit table\n-- @check not_null(nope)\nSELECT wiki FROM silver.edits\n", 2, RuleCheck, "no column nope"},
		{"header.sql", "-- @unti table\nSELECT 1 AS a\n", 1, RuleHeader, "@unti"},
		{"owned.sql", "-- @model silver.mine\nSELECT 1 AS a\n", 1, RuleName, "namespace silver"},
		{"listtype.sql", "SELECT [1, 2] AS l\n", 0, RuleType, "INTEGER[]"},
		{"reads_listtype.sql", "SELECT * FROM gold.listtype\n", 0, RuleInput, "reads gold.listtype, which is refused"},
		{"reads_syntax.sql", "SELECT * FROM gold.syntax\n", 0, RuleInput, "reads gold.syntax, which is refused"},
		{"finer.sql", "-- @unit hour(hour)\nSELECT hour FROM gold.edits_by_type_daily\n", 1, RuleUnit, "finer than"},
		{"hot.sql", "-- @unit day(d)\nSELECT CAST(as_of AS DATE) AS d FROM gold.hot_pages\n", 1, RuleUnit, "finer than"},
		{"hourdate.sql", "-- @unit hour(d)\nSELECT CAST(event_time AS DATE) AS d FROM silver.edits\n", 1, RuleUnit, "an hour is cut from a TIMESTAMPTZ"},
		{"badcheck.sql", "-- @check reconciles(sum(x), silver.edits, count(*))\nSELECT 1 AS a FROM silver.edits\n", 1, RuleCheck, "x"},
	}
	dir := t.TempDir()
	files := map[string]string{"by_type.sql": modelByType}
	for _, c := range cases {
		files[c.file] = c.text
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	models, parseErrs, err := LoadModels(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler), Models: models})
	rep, err := m.Refresh(ctx)
	if !errors.Is(err, ErrChecksFailed) {
		t.Fatalf("refresh: %v, want failed checks for the refused models", err)
	}
	messages := map[string]string{}
	for _, e := range parseErrs {
		var me *ModelError
		if !errors.As(e, &me) {
			t.Fatalf("not a ModelError: %v", e)
		}
		messages[filepath.Base(me.File)] = e.Error()
	}
	for _, c := range rep.Checks {
		if strings.HasSuffix(c.Name, ": refused") {
			if c.Passed {
				t.Fatalf("a refused model's check passed: %v", c)
			}
			messages[strings.TrimSuffix(strings.TrimPrefix(c.Name, "model "), ": refused")] = c.Message
		} else if c.Asset == "gold.edits_by_type_daily" && !c.Passed {
			t.Fatalf("the good model's check failed: %v", c)
		}
	}
	for _, c := range cases {
		msg, ok := messages[c.file]
		if !ok {
			t.Errorf("%s: not refused (refused: %v)", c.file, messages)
			continue
		}
		where := filepath.Join(dir, c.file)
		if c.line > 0 {
			where += fmt.Sprintf(":%d", c.line)
		}
		if want := where + ": " + c.rule + ": "; !strings.HasPrefix(msg, want) || !strings.Contains(msg, c.has) {
			t.Errorf("%s: refused with %q, want it to start %q and name %q", c.file, msg, want, c.has)
		}
	}
	if len(rep.Models) != 1 || rep.Models[0].Ident != "gold.edits_by_type_daily" || rep.Models[0].Rows == 0 {
		t.Fatalf("models built: %+v, want the good one", rep.Models)
	}
	tables, err := lake.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range tables {
		if id != "gold.edits_by_type_daily" && !slices.Contains(GoldTables, id) && strings.HasPrefix(id, "gold.") {
			t.Errorf("a refused model was written: %s", id)
		}
	}
}

// TestModelSnapshotsExpire: a model's table is maintained like a built-in
// mart: each refresh that rebuilds it commits a snapshot, and expiry keeps
// its history within the bound, deleting the files of the snapshots it
// expired (a model never fills the disk with old versions).
func TestModelSnapshotsExpire(t *testing.T) {
	ctx := context.Background()
	lake, log := fixtureLake(t)
	models := writeModels(t, t.TempDir(), map[string]string{"by_type.sql": modelByType})
	m := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler), Models: models, MaxSnapshots: 3, KeepSnapshots: 2,
		Protect: func(context.Context, string) (int64, error) { return 0, nil }})
	for i := range 6 {
		e := edit(fmt.Sprintf("ev-more-%d", i), t0.Add(time.Duration(24+i)*time.Hour), "enwiki", "edit", "More", "Eve", false, 1)
		commit(t, lake, table.SilverEdits, "silver", int64(2+i), table.SilverEditsSchema, []row{e})
		if _, err := m.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	const id = "gold.edits_by_type_daily"
	before, err := lake.Stats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if before.Snapshots < 6 {
		t.Fatalf("inconclusive: %d snapshots of the model before expiry, want one per refresh", before.Snapshots)
	}
	if _, err := m.RunJob(ctx, JobExpire); err != nil {
		t.Fatal(err)
	}
	after, err := lake.Stats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Snapshots != 2 {
		t.Fatalf("the model keeps %d snapshots after expiry, want 2", after.Snapshots)
	}
	files, err := filepath.Glob(filepath.Join(lake.Warehouse(), "gold.db", "edits_by_type_daily", "data", "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) > 2 {
		t.Fatalf("%d data files of the model remain after expiry, want those of its 2 snapshots", len(files))
	}
}

// TestModelInANamespaceOfItsOwn: a model may name a namespace of its own;
// its table is written there, read by name like the others, and the lake
// does not take it for a client's odd table.
func TestModelInANamespaceOfItsOwn(t *testing.T) {
	ctx := context.Background()
	lake, log := fixtureLake(t)
	models := writeModels(t, t.TempDir(), map[string]string{"per_wiki.sql": "-- @model analytics.per_wiki\n-- @key wiki\nSELECT wiki, count(*) AS edits FROM silver.edits GROUP BY wiki\n"})
	if rep, err := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler), Models: models}).Refresh(ctx); err != nil {
		t.Fatalf("%v\n%v", err, rep.Checks)
	}
	if got := queryCSV(t, lake, "SELECT sum(edits) AS n FROM analytics.per_wiki"); got != fmt.Sprintf("n\n%d\n", len(fixtureEdits())) {
		t.Fatalf("analytics.per_wiki: %q", got)
	}
	odd, err := lake.OddTables(ctx)
	if err != nil || len(odd) != 0 {
		t.Fatalf("odd tables: %v %v", odd, err)
	}
}

// TestModelThatFailsToBuild: a model that compiles but fails while it is
// built (a cast that overflows) is not written; its "built" check fails
// with DuckDB's message, the model reading it is not built either, and
// the other model is.
func TestModelThatFailsToBuild(t *testing.T) {
	ctx := context.Background()
	lake, log := fixtureLake(t)
	models := writeModels(t, t.TempDir(), map[string]string{
		"by_type.sql":  modelByType,
		"overflow.sql": "SELECT CAST(count(*) * 10000000000 AS INTEGER) AS n FROM silver.edits\n",
		"reader.sql":   "SELECT n + 1 AS m FROM gold.overflow\n",
	})
	rep, err := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler), Models: models}).Refresh(ctx)
	if !errors.Is(err, ErrChecksFailed) {
		t.Fatalf("refresh: %v, want failed checks", err)
	}
	failed := map[string]string{}
	for _, c := range rep.Checks {
		if !c.Passed {
			failed[c.Name] = c.Message
		}
	}
	if len(failed) != 2 || !strings.Contains(failed["gold.overflow: built"], "Conversion Error") ||
		!strings.Contains(failed["gold.reader: built"], "it reads gold.overflow, which was not") {
		t.Fatalf("failed checks: %v", failed)
	}
	tables, err := lake.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(tables, "gold.overflow") || slices.Contains(tables, "gold.reader") || !slices.Contains(tables, "gold.edits_by_type_daily") {
		t.Fatalf("tables: %v", tables)
	}
}
