package marts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"lakehouse/internal/fault"
	"lakehouse/table"
)

// Output formats of Query.
const (
	FormatTable = "table" // aligned columns with a header (the default)
	FormatCSV   = "csv"   // RFC 4180, header row first
	FormatJSON  = "json"  // one JSON array of objects, keys in column order
)

// hookQueryPlanned is reached once a Query has planned and attached its
// tables, before it reads them (a test holds a query there while the lake
// is compacted and expired beside it).
var hookQueryPlanned = fault.Register("marts.query-planned", "a query's tables planned and attached, before it reads them")

// DefaultQueryMemory is Query's DuckDB memory_limit when QueryOptions sets
// none: past it a query spills to its temporary directory.
const DefaultQueryMemory = "1GB"

// QueryOptions bound and pin one Query.
type QueryOptions struct {
	// Snapshots pins tables (by identifier) to snapshots: a lease's (see
	// table.Lease), so that a query beside a running appliance reads one
	// snapshot per table from start to end. Other tables read their current
	// snapshot.
	Snapshots map[string]int64
	// MemoryLimit is DuckDB's memory_limit ("" : DefaultQueryMemory).
	MemoryLimit string
	// TempDir is where the query spills ("" : a new directory under
	// os.TempDir(), removed when the query ends).
	TempDir string
}

// Query runs one read-only DuckDB SQL statement over every table in the
// lake and writes the result to w in format (table, csv or json; ""
// means table). Each Iceberg table is a view named by its identifier in a
// DuckDB schema named by its namespace: bronze.recentchange, silver.edits,
// silver.editor_sessions, ops.*, gold.*; unqualified names resolve in
// those namespaces, and SHOW TABLES and DESCRIBE list them. Views read the
// tables' current snapshots, or those opt pins (planned once, when Query
// starts). On a remote warehouse, where each file of a view is copied to
// local disk first (Lake.LocalFile), only the tables whose name the SQL
// mentions are attached. The session is a sandbox (sandbox.go): one SELECT,
// reading the lake's files only, bounded in memory; ctx bounds its time.
//
// Errors: ErrFormat for an unknown format (nothing is run), ErrRefused for
// a statement that is not one SELECT (nothing is run), ErrNoTable when the
// SQL names a table or schema that does not exist (the message lists the
// tables that do), ErrBadSQL when DuckDB rejects the SQL; both carry
// DuckDB's message.
func Query(ctx context.Context, lake *table.Lake, sql, format string, w io.Writer, opt QueryOptions) error {
	return query(ctx, lake, sql, format, w, opt)
}

func query(ctx context.Context, lake lakeAPI, sql, format string, w io.Writer, opt QueryOptions) error {
	if format == "" {
		format = FormatTable
	}
	if format != FormatTable && format != FormatCSV && format != FormatJSON {
		return fmt.Errorf("query: %w %q (want %s, %s or %s)", ErrFormat, format, FormatTable, FormatCSV, FormatJSON)
	}
	if strings.TrimSpace(sql) == "" {
		return fmt.Errorf("query: %w: empty statement", ErrBadSQL)
	}
	if opt.MemoryLimit == "" {
		opt.MemoryLimit = DefaultQueryMemory
	}
	if opt.TempDir == "" {
		dir, err := os.MkdirTemp("", "lakehouse-query-")
		if err != nil {
			return fmt.Errorf("query: temporary directory: %w", err)
		}
		defer os.RemoveAll(dir)
		opt.TempDir = filepath.Join(dir, "duckdb")
	}
	d, err := openLakeDuck(ctx, lake, duckLimits{MemoryLimit: opt.MemoryLimit, TempDir: opt.TempDir})
	if err != nil {
		return err
	}
	defer d.Close()
	if err := checkReadOnly(ctx, d, sql); err != nil {
		return err
	}
	idents, err := listTables(ctx, lake)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	remote := strings.Contains(lake.Warehouse(), "://")
	namespaces := []string{}
	for _, id := range idents {
		if remote && !mentions(sql, id) {
			continue
		}
		if ns := id[:strings.LastIndexByte(id, '.')]; !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
		f, err := lake.DataFilesAt(ctx, id, opt.Snapshots[id])
		if err != nil {
			return fmt.Errorf("query: plan %s: %w", id, err)
		}
		if err := d.attach(ctx, id, f); err != nil {
			return fmt.Errorf("query: %w", err)
		}
	}
	if err := d.lockDown(ctx, namespaces); err != nil {
		return err
	}
	fault.Hit(hookQueryPlanned)
	rows, err := d.db.QueryContext(ctx, sql)
	if err != nil {
		return classify(err, idents, opt.MemoryLimit)
	}
	defer rows.Close()
	res, err := readResult(rows)
	if err != nil {
		return classify(err, idents, opt.MemoryLimit)
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
func classify(err error, idents []string, memory string) error {
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return fmt.Errorf("query: %w", err)
	}
	msg := strings.TrimSpace(de.Msg)
	if de.Type == duckdb.ErrorTypeOutOfMemory {
		// DuckDB's message goes on with advice (SET memory_limit, SET
		// threads) the sandbox refuses: its first line says what ran out.
		first, _, _ := strings.Cut(msg, "\n")
		return fmt.Errorf("query: %w: past --memory %s (raise --memory, or read less): %s", ErrMemory, memory, strings.TrimSpace(first))
	}
	if de.Type == duckdb.ErrorTypeCatalog && strings.Contains(msg, "does not exist") && namesRelation(msg) {
		have := "none"
		if len(idents) > 0 {
			have = strings.Join(idents, ", ")
		}
		return fmt.Errorf("query: %w: %s\n(tables in the lake: %s)", ErrNoTable, msg, have)
	}
	return fmt.Errorf("query: %w: %s", ErrBadSQL, msg)
}

// namesRelation reports whether a DuckDB catalog error is about a table,
// view or schema (a missing function is bad SQL, not a missing table).
func namesRelation(msg string) bool {
	for _, kind := range []string{"Table with name", "View with name", "Schema with name", "Catalog with name", "Table or view with name"} {
		if strings.Contains(msg, kind) {
			return true
		}
	}
	return false
}
