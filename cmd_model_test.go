package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestModelsThroughTheCommands: the two example models of docs/models.md,
// given to the demo with --models (the wiring run uses), are built with
// their checks passing and are readable by `query`; `model test` tries
// one (exit 0, its checks and rows printed) and refuses a broken one
// (exit 1, file:line: rule); usage mistakes exit 2.
func TestModelsThroughTheCommands(t *testing.T) {
	page, err := os.ReadFile("docs/models.md")
	if err != nil {
		t.Fatal(err)
	}
	models := t.TempDir()
	for _, b := range regexp.MustCompile("(?s)```sql\n(-- models/([a-z_]+\\.sql)[^\n]*\n.*?)```").FindAllStringSubmatch(string(page), -1) {
		if err := os.WriteFile(filepath.Join(models, b[2]), []byte(b[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "demo")
	var out strings.Builder
	if code := run([]string{"demo", "--data", dir, "--events", "300", "--loops", "1", "--rate", "0", "--models", models}, &out, &out); code != 0 {
		t.Fatalf("demo --models exited %d:\n%s", code, out.String())
	}
	for _, want := range []string{"asset check PASS gold.edits_by_namespace_hourly: reconciles(sum(edits), silver.edits, count(*))",
		"asset check PASS gold.busy_wikis_daily: unique(day, wiki)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	var q strings.Builder
	if code := run([]string{"query", "--data", dir, "--format", "csv",
		"SELECT (SELECT sum(edits) FROM gold.busy_wikis_daily) = (SELECT count(*) FROM silver.edits) AS adds_up"}, &q, &q); code != 0 || q.String() != "adds_up\ntrue\n" {
		t.Fatalf("query of the models: exit %d\n%s", code, q.String())
	}

	try := func(args ...string) (int, string) {
		var o strings.Builder
		code := run(append([]string{"model"}, args...), &o, &o)
		return code, o.String()
	}
	code, o := try("test", "--data", dir, filepath.Join(models, "edits_by_namespace_hourly.sql"), "--rows", "3")
	if code != 0 || !strings.Contains(o, "PASS gold.edits_by_namespace_hourly: unique(wiki, namespace, hour)") || !regexp.MustCompile(`\(\d rows?\)\n$`).MatchString(o) {
		t.Fatalf("model test: exit %d\n%s", code, o)
	}
	bad := filepath.Join(t.TempDir(), "bad.sql")
	if err := os.WriteFile(bad, []byte("-- @unit day(day)\nSELECT wiki,\n  nope\nFROM silver.edits\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, o := try("test", "--data", dir, bad); code != 1 || !strings.Contains(o, bad+":3: columns: ") {
		t.Fatalf("model test of a broken model: exit %d, want 1 with file:line: rule\n%s", code, o)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no subcommand given"},
		{[]string{"run", bad}, `unknown subcommand "run"`},
		{[]string{"test"}, "model test takes one model file, got 0"},
		{[]string{"test", "--rows", "-1", bad}, "--rows -1: want 0 or more"},
	} {
		if code, o := try(append(tc.args, "--data", dir)...); code != 2 || !strings.Contains(o, tc.want) {
			t.Errorf("model %q: exit %d, want 2 with %q\n%s", tc.args, code, tc.want, o)
		}
	}
	if code := run([]string{"demo", "--data", filepath.Join(t.TempDir(), "d2"), "--models", filepath.Join(models, "nothing")}, &out, &out); code != 2 {
		t.Fatalf("demo --models of a missing directory: exit %d, want 2", code)
	}
}
