package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/stream/silver/silvertest"
	"lakehouse/table"
)

// queryLake makes a lake whose bronze holds partition 0 offsets 0..2.
func queryLake(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "lake")
	lake := silvertest.OpenLake(t, dir)
	defer lake.Close()
	rec := silvertest.BronzeEdits(3)
	defer rec.Release()
	if _, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", Offsets: `{"0":3}`, Records: []arrow.RecordBatch{rec}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestQueryArguments: `lakehouse query` takes its flags before or after the
// SQL, reads bronze's broker_partition and broker_offset without quoting,
// and says exactly what is wrong with a missing or second SQL argument.
func TestQueryArguments(t *testing.T) {
	dir := queryLake(t)
	const sql = "SELECT broker_partition, broker_offset FROM bronze.recentchange ORDER BY broker_offset"
	const csv = "broker_partition,broker_offset\n0,0\n0,1\n0,2\n"
	const json = `[
  {"broker_partition": 0, "broker_offset": 0},
  {"broker_partition": 0, "broker_offset": 1},
  {"broker_partition": 0, "broker_offset": 2}
]
`
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // the whole stdout when code is 0, else a part of the output
	}{
		{"flags first", []string{"--data", dir, "--format", "csv", sql}, 0, csv},
		{"flags after", []string{sql, "--data", dir, "--format", "json"}, 0, json},
		{"flags around", []string{"--data", dir, sql, "--format=csv"}, 0, csv},
		{"single dash", []string{sql, "-format", "csv", "-data", dir}, 0, csv},
		{"statement after --", []string{"--data", dir, "--format", "csv", "--", "-- a comment\nSELECT 1 AS one"}, 0, "one\n1\n"},
		{"missing", []string{"--data", dir, "--format", "csv"}, 2, "lakehouse query: no SQL statement given"},
		{"missing shows usage", []string{"--data", dir}, 2, `Usage: lakehouse query [flags] "SQL" [flags]`},
		{"two statements", []string{"--data", dir, "SELECT 1", "SELECT 2", "--format", "csv"}, 2,
			`lakehouse query: want one SQL statement, got 2 arguments "SELECT 1" "SELECT 2" (quote the statement as one argument)`},
		{"unquoted", []string{"--data", dir, "SELECT", "1"}, 2, `got 2 arguments "SELECT" "1"`},
		{"flag value missing after the SQL", []string{"--data", dir, sql, "--format"}, 2, "flag needs an argument: -format"},
		{"bad flag after the SQL", []string{"--data", dir, sql, "--nope"}, 2, "flag provided but not defined: -nope"},
		{"bad format after the SQL", []string{sql, "--data", dir, "--format", "xml"}, 1, `unknown output format "xml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(append([]string{"query"}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("lakehouse query %q: exit %d, want %d\nstdout: %s\nstderr: %s", tc.args, code, tc.code, stdout.String(), stderr.String())
			}
			if tc.code == 0 {
				if got := stdout.String(); got != tc.want {
					t.Errorf("lakehouse query %q: got\n%s\nwant\n%s", tc.args, got, tc.want)
				}
				return
			}
			if out := stdout.String() + stderr.String(); !strings.Contains(out, tc.want) {
				t.Errorf("lakehouse query %q: output %q lacks %q", tc.args, out, tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("lakehouse query %q: stdout on error: %q", tc.args, stdout.String())
			}
		})
	}
}
