package main

import (
	"lakehouse/internal/demo"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandsFindTheDemoLake: after a plain `demo`, query, verify and
// topics without --data read ./lakehouse-demo (saying so) when there is no
// ./lakehouse-data; and verify on a missing bronze data file names reland.
func TestCommandsFindTheDemoLake(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo, a child pipeline of its own; skipped with -short")
	}
	t.Chdir(t.TempDir())
	t.Setenv(envData, "")
	var out strings.Builder
	if code := run([]string{"demo", "--events", "300", "--loops", "1", "--http", "off"}, &out, &out); code != 0 {
		t.Fatalf("demo: exit %d\n%s", code, out.String())
	}
	said := "no ./lakehouse-data here: reading the demo's lake in ./lakehouse-demo"
	for _, args := range [][]string{
		{"query", "SELECT count(*) AS n FROM silver.edits"},
		{"verify"},
		{"topics"},
	} {
		var stdout, stderr strings.Builder
		if code := run(args, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), said) {
			t.Errorf("%v: exit %d, stderr %q; want 0 and %q\n%s", args, code, stderr.String(), said, stdout.String())
		}
	}
	// Chosen explicitly, ./lakehouse-data is where they look, as before.
	var stderr strings.Builder
	if code := run([]string{"topics", "--data", defaultDataDir}, &stderr, &stderr); code != 1 || strings.Contains(stderr.String(), said) {
		t.Errorf("topics --data %s: exit %d, %q; want 1, no broker there", defaultDataDir, code, stderr.String())
	}

	files, _ := filepath.Glob(filepath.Join(demo.DefaultDir, "warehouse", "bronze.db", "recentchange", "data", "*", "*.parquet"))
	if len(files) == 0 {
		t.Fatal("no bronze data file in the demo's lake")
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	code := run([]string{"verify"}, &out, &out)
	abs, _ := filepath.Abs(demo.DefaultDir)
	for _, want := range []string{"no such file or directory", "a bronze data file is missing",
		"reland --data " + abs + " --dry-run` lists the missing files"} {
		if code != 1 || !strings.Contains(out.String(), want) {
			t.Errorf("verify with a bronze file missing: exit %d, want 1 and %q in:\n%s", code, want, out.String())
		}
	}
}

// TestSelfAsInvoked: hints print the command as it was invoked, and
// `go run .` only for a binary go run built.
func TestSelfAsInvoked(t *testing.T) {
	for arg0, want := range map[string]string{
		"/tmp/go-build2871/b001/exe/lakehouse":                 "go run .",
		"/root/.cache/go-build/49/491e6ea6c0eabf8-d/lakehouse": "go run .",
		"/tmp/go-build2871/b001/lakehouse.test":                "/tmp/go-build2871/b001/lakehouse.test",
		"lakehouse":                                            "lakehouse",
		"./no-such-lakehouse":                                  "./no-such-lakehouse",
		"/opt/lh/no-such-lakehouse":                            "/opt/lh/no-such-lakehouse",
	} {
		if got := selfFrom(arg0); got != want {
			t.Errorf("selfFrom(%q) = %q, want %q", arg0, got, want)
		}
	}
}
