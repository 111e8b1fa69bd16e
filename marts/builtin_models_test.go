package marts

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lakehouse/table"
)

// TestBuiltinMartsAreModels: the four built-in marts are read as models
// (their names, units and keys from their files' headers, over columns
// their schemas have), and the four, given to a refresh as user models of
// other names (the model path: compile, views cut to the units rebuilt, a
// few units per statement), produce tables identical row for row to the
// golden files of the built-in ones, and the same rows again after an
// append rebuilds one day and one hour. hot_pages goes as a model by table
// with its escape written out: the built-in runs a prepare step that
// prunes what it reads to the pages that can rank, the model reads all of
// silver, and the rows are the same.
func TestBuiltinMartsAreModels(t *testing.T) {
	for i, mt := range marts {
		src, err := readSQL(mt.file)
		if err != nil {
			t.Fatal(err)
		}
		md, err := parseHeader(mt.file, src)
		if err != nil {
			t.Fatalf("%s: %v", mt.file, err)
		}
		if md.Ident != GoldTables[i] || mt.ident != md.Ident {
			t.Fatalf("%s names %s, want %s", mt.file, md.Ident, GoldTables[i])
		}
		cols := append(slices.Clone(md.Key), md.Unit.Col)
		for _, c := range cols {
			if _, ok := mt.schema.FieldsByName(c); c != "" && !ok {
				t.Errorf("%s: the header names column %s, which the schema lacks", mt.file, c)
			}
		}
	}

	ctx := context.Background()
	lake, log := fixtureLake(t)
	var models []Model
	for _, mt := range marts {
		src, err := readSQL(mt.file)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(mt.ident, "gold.")
		src = strings.Replace(src, "-- @model "+mt.ident, "-- @model gold.as_model_"+name, 1)
		if mt.prepare != nil {
			// Its escapes written out: the prepare step only prunes what
			// it reads, so over all of silver it gives the same rows.
			src = strings.NewReplacer("FROM hot_input", "FROM silver.edits",
				"getvariable('hot_as_of')", "(SELECT max(event_time) FROM silver.edits)").Replace(src)
		}
		md, err := ParseModel(filepath.Join(t.TempDir(), name+".sql"), src)
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, md)
	}
	m := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler), TopN: 4, ChunkRows: 3, Models: models})
	rep, err := m.Refresh(ctx)
	if err != nil {
		t.Fatalf("refresh: %v\n%v", err, rep.Checks)
	}
	if len(rep.Models) != len(marts) {
		t.Fatalf("models built: %+v", rep.Models)
	}
	for _, md := range rep.Models {
		if md.Ident == "gold.as_model_wiki_activity_hourly" && md.Statements != 3 {
			t.Errorf("the hourly mart as a model ran as %d statements, want one per hour (ChunkRows 3)", md.Statements)
		}
	}
	sorted := func(csv string) string {
		lines := strings.Split(strings.TrimSpace(csv), "\n")
		slices.Sort(lines[1:])
		return strings.Join(lines, "\n")
	}
	for _, mt := range marts {
		name := strings.TrimPrefix(mt.ident, "gold.")
		want, err := os.ReadFile(filepath.Join("testdata", "golden", name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		if got := dumpTable(t, lake, "gold.as_model_"+name); sorted(got) != sorted(string(want)) {
			t.Errorf("%s as a model:\n%s\nwant (golden):\n%s", name, got, want)
		}
	}

	late := edit("ev-late", t0.Add(72*time.Hour), "enwiki", "new", "Late", "Eve", false, 10)
	commit(t, lake, table.SilverEdits, "silver", 2, table.SilverEditsSchema, []row{late})
	if rep, err = m.Refresh(ctx); err != nil {
		t.Fatalf("refresh after the append: %v", err)
	}
	var scopes []string
	for _, md := range rep.Models {
		scopes = append(scopes, md.Ident+" "+md.Scope)
	}
	if want := []string{"gold.as_model_wiki_activity_hourly 1 hour", "gold.as_model_top_editors_daily 1 day", "gold.as_model_editor_sessions_daily 0 days", "gold.as_model_hot_pages all (its inputs changed)"}; !slices.Equal(scopes, want) {
		t.Fatalf("after the append the models rebuilt %q, want %q", scopes, want)
	}
	for _, mt := range marts {
		name := strings.TrimPrefix(mt.ident, "gold.")
		if got, want := dumpTable(t, lake, "gold.as_model_"+name), dumpTable(t, lake, mt.ident); got != want {
			t.Errorf("%s as a model after the append:\n%s\nwant (the built-in):\n%s", name, got, want)
		}
	}
}
