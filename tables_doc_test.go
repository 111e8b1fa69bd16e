package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"lakehouse/marts"
	"lakehouse/table"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated docs (docs/tables.md, docs/flags.md) from the code")

// tablesReference renders docs/tables.md: every table of the lake with
// what it holds and each column's type and meaning, from the schemas the
// tables are created with.
func tablesReference(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`# Tables and columns

Generated from the schemas the appliance creates its tables with (` + "`go test -run TestTablesReference . -update-docs`" + `);
` + "`TestTablesReference`" + ` fails when this file and the schemas differ. Every table is an Iceberg table
in the warehouse, readable by ` + "`lakehouse query`" + ` (a DuckDB view of the same name) and by any engine
through the REST catalog. Timestamps are UTC (` + "`timestamptz`" + `). See [querying.md](querying.md) for how to
ask questions, with examples.
`)
	idents := slices.Concat(table.Tables, marts.GoldTables, []string{marts.OpsRuns, marts.OpsAssetChecks})
	slices.Sort(idents)
	for _, id := range idents {
		comment, cols, err := table.Describe(id)
		if err != nil {
			comment, cols, err = marts.Describe(id)
		}
		if err != nil {
			t.Fatalf("describe %s: %v", id, err)
		}
		if comment == "" {
			t.Errorf("%s: no description of the table", id)
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s.\n\n| column | type | null | what it holds |\n|---|---|---|---|\n", id, comment)
		for _, c := range cols {
			if c.Doc == "" {
				t.Errorf("%s.%s: no description (table/schemas.go or marts/describe.go)", id, c.Name)
			}
			null := ""
			if c.Nullable {
				null = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", c.Name, c.Type, null, c.Doc)
		}
	}
	return b.String()
}

// TestTablesReference: docs/tables.md names every table and column the
// appliance creates, with its type and a description, as the schemas
// have them.
func TestTablesReference(t *testing.T) {
	want := tablesReference(t)
	if *updateDocs {
		if err := os.WriteFile("docs/tables.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("docs/tables.md")
	if err != nil || string(got) != want {
		t.Fatalf("docs/tables.md is not what the schemas say (%v): run `go test -run TestTablesReference . -update-docs`", err)
	}
}
