package marts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/table"
)

// tree hashes every file under dirs: path -> sha256.
func tree(t testing.TB, dirs ...string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = sha256.Sum256(b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestQuerySandbox: each way out of a read-only query over the lake is
// refused, by name when it is not a SELECT, and no file of the data
// directory or of a scratch directory beside it changes; what a user
// needs to find the tables works.
func TestQuerySandbox(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lake, _ := fixtureLakeWith(t, table.Config{Dir: dir})
	scratch := t.TempDir()
	secret := filepath.Join(scratch, "secret.csv")
	if err := os.WriteFile(secret, []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	silver, err := lake.DataFiles(ctx, table.SilverEdits)
	if err != nil || len(silver.Paths) == 0 {
		t.Fatalf("inconclusive: no silver file (%v)", err)
	}
	live := silver.Paths[0]
	before := tree(t, dir, scratch)
	for _, tc := range []struct {
		sql  string
		kind string // "" : DuckDB itself must refuse (not ErrRefused)
	}{
		{"SELECT * FROM read_csv(" + quoteString(secret) + ")", ""},
		{"SELECT * FROM read_text('/etc/passwd')", ""},
		{"SELECT * FROM glob(" + quoteString(scratch+"/*") + ")", ""},
		{"SELECT * FROM read_parquet(" + quoteString(filepath.Join(dir, "catalog.db")) + ")", ""},
		{"COPY (SELECT 1) TO " + quoteString(filepath.Join(scratch, "x.csv")), "COPY"},
		{"COPY (SELECT * FROM silver.edits WHERE false) TO " + quoteString(live) + " (FORMAT parquet)", "COPY"},
		{"ATTACH " + quoteString(filepath.Join(scratch, "x.duckdb")), "ATTACH"},
		{"INSTALL httpfs", "INSTALL"},
		{"LOAD httpfs", "LOAD"},
		{"SET enable_external_access = true", "SET"},
		{"  -- a comment\nCREATE TABLE silver.foo AS SELECT 1", "CREATE TABLE"},
		{"CREATE OR REPLACE TEMP VIEW v AS SELECT 1", "CREATE VIEW"},
		{"EXPORT DATABASE " + quoteString(filepath.Join(scratch, "exp")), "EXPORT"},
		{"PRAGMA enable_profiling", "PRAGMA"},
		{"SELECT 1; COPY (SELECT 1) TO " + quoteString(filepath.Join(scratch, "y.csv")), "2 statements"},
	} {
		var out bytes.Buffer
		err := Query(ctx, lake, tc.sql, FormatCSV, &out, QueryOptions{})
		switch {
		case err == nil:
			t.Errorf("%s: ran (%q)", tc.sql, out.String())
		case tc.kind == "" && errors.Is(err, ErrRefused):
			t.Errorf("%s: refused before DuckDB saw it: %v", tc.sql, err)
		case tc.kind != "" && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.kind)):
			t.Errorf("%s: %v; want ErrRefused naming %s", tc.sql, err, tc.kind)
		case strings.Count(strings.TrimSpace(err.Error()), "\n") > 0 && errors.Is(err, ErrRefused):
			t.Errorf("%s: the refusal is not one line: %q", tc.sql, err)
		}
	}
	if after := tree(t, dir, scratch); !maps.Equal(before, after) {
		t.Fatalf("files changed under the data directory or the scratch directory: %d before, %d after", len(before), len(after))
	}

	var out bytes.Buffer
	if err := Query(ctx, lake, "SHOW TABLES", FormatCSV, &out, QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"recentchange", "edits", "editor_sessions", "stream_progress"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("SHOW TABLES lacks %s:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := Query(ctx, lake, "DESCRIBE silver.edits", FormatCSV, &out, QueryOptions{}); err != nil || !strings.Contains(out.String(), "event_id") {
		t.Errorf("DESCRIBE silver.edits: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := Query(ctx, lake, "SELECT count(*) AS n FROM edits", FormatCSV, &out, QueryOptions{}); err != nil || out.String() != "n\n20\n" {
		t.Errorf("an unqualified table name: %v %q", err, out.String())
	}
}

// TestQueryMemoryAndTime: a query past its memory limit or its context's
// deadline stops with an error, not a result.
func TestQueryMemoryAndTime(t *testing.T) {
	lake, _ := fixtureLake(t)
	heavy := "SELECT count(DISTINCT a.x || b.x) FROM (SELECT range::VARCHAR AS x FROM range(3000000)) a, (SELECT 1 AS x) b"
	err := Query(context.Background(), lake, heavy, FormatCSV, &bytes.Buffer{}, QueryOptions{MemoryLimit: "8MB"})
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "--memory 8MB") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a query over 8MB: %v, want one line naming --memory", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	endless := "SELECT count(*) FROM range(1000000000000) a"
	start := time.Now()
	err = Query(ctx, lake, endless, FormatCSV, &bytes.Buffer{}, QueryOptions{})
	if err == nil || ctx.Err() == nil {
		t.Errorf("a query past its deadline: %v after %s", err, time.Since(start))
	}
}

// FuzzQuerySandbox: whatever statement runs in the sandbox, no file is
// created or changed outside the query's temporary directory: the data
// directory, a scratch directory and the working directory (where a
// relative path lands) are hashed after every input.
func FuzzQuerySandbox(f *testing.F) {
	dir, scratch, tmp := f.TempDir(), f.TempDir(), f.TempDir()
	for _, s := range []string{"SELECT * FROM silver.edits", "COPY (SELECT 1) TO 'x.csv'", "ATTACH 'x.db'",
		"SELECT * FROM read_csv('/etc/passwd')", "SELECT 1; COPY (SELECT 1) TO 'y'", "INSTALL httpfs",
		"CREATE TABLE t AS SELECT 1", "SET enable_external_access=true", "EXPORT DATABASE 'e'", "PRAGMA version",
		"CALL checkpoint()", "SELECT * FROM glob('*')", "FROM bronze.recentchange"} {
		f.Add(s)
	}
	// The lake and the session belong to f, not to the first input's t:
	// closing the lake when one input ends would change the tree the
	// next input is compared with.
	lake, _ := fixtureLakeWith(f, table.Config{Dir: dir})
	ctx := context.Background()
	d, err := openLakeDuck(ctx, lake, duckLimits{MemoryLimit: "64MB", TempDir: filepath.Join(tmp, "duckdb")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	for _, id := range []string{table.Bronze, table.SilverEdits} {
		files, err := lake.DataFiles(ctx, id)
		if err == nil {
			err = d.attach(ctx, id, files)
		}
		if err != nil {
			f.Fatal(err)
		}
	}
	if err := d.lockDown(ctx, []string{"bronze", "silver"}); err != nil {
		f.Fatal(err)
	}
	dirs := []string{dir, scratch, "."}
	before := tree(f, dirs...)
	f.Fuzz(func(t *testing.T, sql string) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if checkReadOnly(ctx, d, sql) == nil {
			if rows, err := d.db.QueryContext(ctx, sql); err == nil {
				for rows.Next() {
				}
				rows.Close()
			}
		}
		if after := tree(t, dirs...); !maps.Equal(before, after) {
			t.Fatalf("after %q files changed: %d before, %d after", sql, len(before), len(after))
		}
	})
}
