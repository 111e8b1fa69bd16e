package marts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table"
)

func TestQueryErrors(t *testing.T) {
	lake, _ := fixtureLake(t)
	cases := []struct {
		name, sql, format string
		want              error
		contains          []string
	}{
		{"missing table", "SELECT * FROM gold.nope", "", ErrNoTable,
			[]string{"gold.nope", "does not exist", "tables in the lake:", "silver.edits"}},
		{"missing schema", "SELECT * FROM nowhere.edits", "", ErrNoTable, []string{"nowhere"}},
		{"bad syntax", "SELEC 1", "", ErrBadSQL, []string{"syntax error", "SELEC"}},
		{"bad column", "SELECT no_such_column FROM silver.edits", "", ErrBadSQL, []string{"no_such_column"}},
		{"missing function", "SELECT getenv('HOME')", "", ErrBadSQL, []string{"getenv"}},
		{"did you mean", "SELECT count(*) FROM silver.edit", "", ErrNoTable, []string{"Did you mean", "silver.edits"}},
		{"caret", "SELECT wiki FROM silver.edits WHERE titel = 1", "", ErrBadSQL, []string{"titel", "^", "Candidate bindings"}},
		{"empty", "   ", "", ErrBadSQL, nil},
		{"bad format", "SELECT 1", "xml", ErrFormat, []string{"xml"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Query(context.Background(), lake, tc.sql, tc.format, &out, QueryOptions{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			for _, s := range tc.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q: want it to contain %q", err, s)
				}
			}
			if out.Len() != 0 {
				t.Errorf("output on error: got %q, want none", out.String())
			}
		})
	}
}

func TestQueryFormats(t *testing.T) {
	lake, _ := fixtureLake(t)
	sql := `SELECT wiki, count(*) AS edits, sum(byte_delta) / count(*) AS avg_delta, min(event_time) AS first,
		bool_or(bot) AS any_bot, CAST(NULL AS VARCHAR) AS nothing
		FROM silver.edits GROUP BY wiki ORDER BY wiki`
	cases := []struct {
		format, want string
	}{
		{FormatTable, `wiki    edits  avg_delta  first                 any_bot  nothing
------  -----  ---------  --------------------  -------  -------
dewiki      5      384.6  2026-02-26 14:31:00Z  false    NULL
enwiki     15      231.8  2026-02-26 14:00:00Z  true     NULL
(2 rows)
`},
		{FormatCSV, `wiki,edits,avg_delta,first,any_bot,nothing
dewiki,5,384.6,2026-02-26 14:31:00Z,false,
enwiki,15,231.8,2026-02-26 14:00:00Z,true,
`},
		{FormatJSON, `[
  {"wiki": "dewiki", "edits": 5, "avg_delta": 384.6, "first": "2026-02-26 14:31:00Z", "any_bot": false, "nothing": null},
  {"wiki": "enwiki", "edits": 15, "avg_delta": 231.8, "first": "2026-02-26 14:00:00Z", "any_bot": true, "nothing": null}
]
`},
	}
	for _, tc := range cases {
		t.Run(tc.format, func(t *testing.T) {
			var out bytes.Buffer
			if err := Query(context.Background(), lake, sql, tc.format, &out, QueryOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
			if tc.format == FormatJSON && !json.Valid(out.Bytes()) {
				t.Errorf("invalid JSON: %s", out.String())
			}
		})
	}
}

// TestQueryEveryTable: every table of the lake is a view by its dotted name,
// including tables without any data file (empty, with their columns).
func TestQueryEveryTable(t *testing.T) {
	lake, _ := fixtureLake(t)
	var out bytes.Buffer
	sql := `SELECT (SELECT count(*) FROM bronze.recentchange) AS bronze, (SELECT count(*) FROM silver.edits) AS silver,
		(SELECT count(*) FROM silver.editor_sessions) AS sessions, (SELECT count(*) FROM ops.stream_progress) AS progress,
		(SELECT count(query_id) FROM ops.stream_progress) AS named_column`
	if err := Query(context.Background(), lake, sql, FormatCSV, &out, QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "bronze,silver,sessions,progress,named_column\n20,20,7,0,0\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestQueryCountsSplitFilesOnce: a data file the Iceberg planner splits
// into several tasks (as it splits any file over read.split.target-size,
// 128 MiB by default: a compacted day of bronze) is read once: query's
// count equals the table's record count and its distinct offsets.
func TestQueryCountsSplitFilesOnce(t *testing.T) {
	ctx := context.Background()
	lake := openTestLake(t, t.TempDir())
	tbl, err := lake.Catalog().LoadTable(ctx, icetable.Identifier{"bronze", "recentchange"})
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{icetable.ParquetRowGroupLimitKey: "50", icetable.ReadSplitTargetSizeKey: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 2, 26, 14, 0, 0, 0, time.UTC)
	var rows []row
	for i := range 1000 {
		rows = append(rows, bronzeRow(int32(i%2), int64(i/2), "edit", at.Add(time.Duration(i)*time.Second)))
	}
	commit(t, lake, table.Bronze, "bronze", 0, table.BronzeSchema, rows)
	if tbl, err = lake.Catalog().LoadTable(ctx, icetable.Identifier{"bronze", "recentchange"}); err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	for _, task := range tasks {
		files[task.File.FilePath()] = true
	}
	if len(tasks) <= len(files) {
		t.Fatalf("inconclusive: %d tasks for %d files; want the files split", len(tasks), len(files))
	}
	var out bytes.Buffer
	if err := Query(ctx, lake, "SELECT count(*) AS n, count(DISTINCT (broker_partition, broker_offset)) AS offsets FROM bronze.recentchange", FormatCSV, &out, QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "n,offsets\n1000,1000\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
