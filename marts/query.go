package marts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"lakehouse/table"
)

// Output formats of Query.
const (
	FormatTable = "table" // aligned columns with a header (the default)
	FormatCSV   = "csv"   // RFC 4180, header row first
	FormatJSON  = "json"  // one JSON array of objects, keys in column order
)

// Query runs one DuckDB SQL statement over every table in the lake and
// writes the result to w in format (table, csv or json; "" means table).
// Each Iceberg table is a view named by its identifier in a DuckDB schema
// named by its namespace: bronze.recentchange, silver.edits,
// silver.editor_sessions, ops.*, gold.*. Views read the tables' current
// snapshots (planned once, when Query starts). On a remote warehouse,
// where each file of a view is copied to local disk first (Lake.LocalFile),
// only the tables whose name the SQL mentions are attached.
//
// Errors: ErrFormat for an unknown format (nothing is run), ErrNoTable when
// the SQL names a table or schema that does not exist (the message lists the
// tables that do), ErrBadSQL when DuckDB rejects the SQL; both carry
// DuckDB's message.
func Query(ctx context.Context, lake *table.Lake, sql, format string, w io.Writer) error {
	return query(ctx, lake, sql, format, w)
}

func query(ctx context.Context, lake lakeAPI, sql, format string, w io.Writer) error {
	if format == "" {
		format = FormatTable
	}
	if format != FormatTable && format != FormatCSV && format != FormatJSON {
		return fmt.Errorf("query: %w %q (want %s, %s or %s)", ErrFormat, format, FormatTable, FormatCSV, FormatJSON)
	}
	if strings.TrimSpace(sql) == "" {
		return fmt.Errorf("query: %w: empty statement", ErrBadSQL)
	}
	d, err := openLakeDuck(ctx, lake, duckLimits{})
	if err != nil {
		return err
	}
	defer d.Close()
	idents, err := listTables(ctx, lake)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	remote := strings.Contains(lake.Warehouse(), "://")
	for _, id := range idents {
		if remote && !mentions(sql, id) {
			continue
		}
		if _, err := d.attachFromLake(ctx, lake, id); err != nil {
			return fmt.Errorf("query: %w", err)
		}
	}
	rows, err := d.db.QueryContext(ctx, sql)
	if err != nil {
		return classify(err, idents)
	}
	defer rows.Close()
	res, err := readResult(rows)
	if err != nil {
		return classify(err, idents)
	}
	return res.write(w, format)
}

// mentions reports whether sql may name the table ident ("namespace.name"):
// whether it holds the name, ignoring case. It may say yes for a table the
// SQL does not read (a column or another table sharing the word), never no
// for one it reads.
func mentions(sql, ident string) bool {
	name := ident[strings.LastIndexByte(ident, '.')+1:]
	return strings.Contains(strings.ToLower(sql), strings.ToLower(name))
}

// classify turns a DuckDB error into ErrNoTable or ErrBadSQL, keeping
// DuckDB's message.
func classify(err error, idents []string) error {
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return fmt.Errorf("query: %w", err)
	}
	msg := strings.TrimSpace(de.Msg)
	if de.Type == duckdb.ErrorTypeCatalog && strings.Contains(msg, "does not exist") {
		have := "none"
		if len(idents) > 0 {
			have = strings.Join(idents, ", ")
		}
		return fmt.Errorf("query: %w: %s\n(tables in the lake: %s)", ErrNoTable, msg, have)
	}
	return fmt.Errorf("query: %w: %s", ErrBadSQL, msg)
}
