package marts

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"lakehouse/table"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGoldenMarts builds the four marts from the fixed silver input and
// compares each gold table, read back from the lake as CSV, with its golden
// file (refresh with go test ./marts -run TestGoldenMarts -update). It runs
// on a local warehouse and on S3 (gofakes3): DuckDB reads the S3 data files
// through the lake's local copies (Lake.LocalFile), and the marts, the
// checks and a query give the same rows as on local disk.
func TestGoldenMarts(t *testing.T) {
	for _, wh := range []string{"local", "s3"} {
		t.Run(wh, func(t *testing.T) {
			cfg := table.Config{Dir: t.TempDir()}
			if wh == "s3" {
				cfg = s3Config(t, cfg.Dir)
			}
			lake, log := fixtureLakeWith(t, cfg)
			goldenMarts(t, lake, log)
			if wh == "s3" {
				cache := filepath.Join(cfg.Dir, "cache", "files")
				copies, _ := filepath.Glob(filepath.Join(cache, "*"))
				if len(copies) == 0 {
					t.Errorf("inconclusive: no local copies in %s: DuckDB did not read from S3 through them", cache)
				}
				// A query copies only the tables it names.
				if err := os.RemoveAll(cache); err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				if err := Query(context.Background(), lake, "SELECT count(*) FROM gold.hot_pages", FormatCSV, &out, QueryOptions{}); err != nil {
					t.Fatal(err)
				}
				hot, _ := lake.DataFiles(context.Background(), HotPages)
				if copies, _ := filepath.Glob(filepath.Join(cache, "*")); len(copies) != len(hot.Paths) {
					t.Errorf("a query of gold.hot_pages copied %d files, want its %d", len(copies), len(hot.Paths))
				}
			}
		})
	}
}

func goldenMarts(t *testing.T, lake *table.Lake, log fakeLog) {
	m := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler), TopN: 4})
	ctx := context.Background()
	rep, err := m.Refresh(ctx)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if !rep.Passed() {
		t.Fatalf("checks on the fixture: %v", rep.Checks)
	}
	for _, id := range GoldTables {
		t.Run(strings.TrimPrefix(id, "gold."), func(t *testing.T) {
			var got bytes.Buffer
			if err := Query(ctx, lake, "SELECT * FROM "+id, FormatCSV, &got, QueryOptions{}); err != nil {
				t.Fatalf("query %s: %v", id, err)
			}
			path := filepath.Join("testdata", "golden", strings.TrimPrefix(id, "gold.")+".csv")
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run with -update to create): %v", err)
			}
			if got.String() != string(want) {
				t.Errorf("%s differs from %s\ngot:\n%s\nwant:\n%s", id, path, got.String(), want)
			}
		})
	}
}

// TestHourlyMartMatchesGo recomputes wiki_activity_hourly from the fixture
// in plain Go, so the golden file is not merely self-consistent.
func TestHourlyMartMatchesGo(t *testing.T) {
	type agg struct {
		edits, newPages, bot, human, added, removed int64
		users                                       map[string]bool
	}
	want := map[string]*agg{}
	for _, e := range fixtureEdits() {
		k := fmt.Sprintf("%s,%s", e["wiki"], e["event_time"].(time.Time).Truncate(time.Hour).Format("2006-01-02 15:04:05Z07:00"))
		a := want[k]
		if a == nil {
			a = &agg{users: map[string]bool{}}
			want[k] = a
		}
		a.edits++
		if e["type"] == "new" {
			a.newPages++
		}
		if e["bot"].(bool) {
			a.bot++
		} else {
			a.human++
		}
		if d := e["byte_delta"].(int64); d > 0 {
			a.added += d
		} else {
			a.removed -= d
		}
		a.users[e["user"].(string)] = true
	}
	var wantLines []string
	for k, a := range want {
		wantLines = append(wantLines, fmt.Sprintf("%s,%d,%d,%d,%d,%d,%d,%d", k, a.edits, a.newPages, a.bot, a.human, len(a.users), a.added, a.removed))
	}
	sort.Strings(wantLines)

	lake, log := fixtureLake(t)
	m := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	if _, err := m.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	var got bytes.Buffer
	if err := Query(ctx, lake, "SELECT * FROM gold.wiki_activity_hourly ORDER BY wiki, hour", FormatCSV, &got, QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	gotLines := strings.Split(strings.TrimSpace(got.String()), "\n")[1:]
	sort.Strings(gotLines)
	if g, w := strings.Join(gotLines, "\n"), strings.Join(wantLines, "\n"); g != w {
		t.Errorf("wiki_activity_hourly:\ngot:\n%s\nwant:\n%s", g, w)
	}
}

// TestRefreshEmptyLake: marts build (empty) from empty silver tables and the
// checks pass; the empty gold tables still have their columns.
func TestRefreshEmptyLake(t *testing.T) {
	lake := openTestLake(t, t.TempDir())
	m := New(lake, fakeLog{}, Config{Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	rep, err := m.Refresh(ctx)
	if err != nil {
		t.Fatalf("refresh: %v (%v)", err, rep.Checks)
	}
	for _, id := range GoldTables {
		if got := rep.Rows[id]; got != 0 {
			t.Errorf("%s rows: got %d, want 0", id, got)
		}
		var out bytes.Buffer
		if err := Query(ctx, lake, "SELECT * FROM "+id, FormatCSV, &out, QueryOptions{}); err != nil {
			t.Fatalf("query %s: %v", id, err)
		}
		sc, _ := GoldSchema(id)
		var names []string
		for _, f := range sc.Fields() {
			names = append(names, f.Name)
		}
		if got, want := strings.TrimSpace(out.String()), strings.Join(names, ","); got != want {
			t.Errorf("%s: got %q, want header only %q", id, got, want)
		}
	}
	var sum bytes.Buffer
	if err := m.Summary(ctx, &sum); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.String(), "no edits yet") {
		t.Errorf("summary of empty gold: got %q", sum.String())
	}
}

// TestSummary checks the demo summary on the fixture.
func TestSummary(t *testing.T) {
	lake, log := fixtureLake(t)
	m := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	var before bytes.Buffer
	if err := m.Summary(ctx, &before); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(before.String(), "none yet") {
		t.Errorf("summary before refresh: got %q", before.String())
	}
	if _, err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := m.Summary(ctx, &got); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"20 edits (3 new pages, 15% by bots) on 2 wikis",
		"busiest wikis: enwiki 15, dewiki 5", "Bob on enwiki 2", "enwiki:Rust 3 edits/2 editors",
		"2026-02-27 2 sessions (0 bot), median 30s, p95 57s, 1.5 edits/session"} {
		if !strings.Contains(got.String(), want) {
			t.Errorf("summary: got\n%s\nwant it to contain %q", got.String(), want)
		}
	}
	t.Logf("summary:\n%s", got.String())
}
