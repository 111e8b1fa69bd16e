package marts

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Query's DuckDB session is a sandbox: it reads the lake's data files and
// nothing else, and writes nothing.
//
//   - Before anything runs, the statement is parsed (json_serialize_sql,
//     which serializes SELECT statements only): anything but one SELECT
//     (SHOW, DESCRIBE, SUMMARIZE, FROM-first and VALUES queries are
//     SELECTs) is refused with its kind named, and never run: COPY,
//     EXPORT, ATTACH, INSTALL, LOAD, SET, CREATE, PRAGMA, several
//     statements at once. A statement that does not parse is left to
//     DuckDB, whose parser stops it with its own message (the caret).
//   - Once the lake's tables are attached as views, external access is
//     turned off except for the data files those views read
//     (allowed_paths), and the configuration is locked: read_csv of any
//     other file, glob, a COPY or ATTACH that slipped through, an INSTALL
//     or LOAD, and turning access back on all fail in DuckDB itself.
//   - Its memory is bounded (QueryOptions.MemoryLimit) and it spills to a
//     directory of its own; the caller's context bounds its time.

// serialized is json_serialize_sql's answer.
type serialized struct {
	Error        bool              `json:"error"`
	ErrorType    string            `json:"error_type"`
	ErrorMessage string            `json:"error_message"`
	Statements   []json.RawMessage `json:"statements"`
}

// checkReadOnly refuses sql unless it is one SELECT (ErrRefused naming what
// it is); a statement DuckDB cannot parse passes, to fail in DuckDB with
// its own message.
func checkReadOnly(ctx context.Context, d *duck, sql string) error {
	var raw string
	if err := d.db.QueryRowContext(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", sql).Scan(&raw); err != nil {
		return fmt.Errorf("query: parse the statement: %w", err)
	}
	var s serialized
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return fmt.Errorf("query: parse the statement: %w", err)
	}
	switch {
	case s.Error && s.ErrorType == "parser":
		return nil
	case s.Error && statements(sql) > 1:
		return fmt.Errorf("query: %w: %d statements; query runs one read-only SELECT at a time", ErrRefused, statements(sql))
	case s.Error:
		return fmt.Errorf("query: %w: %s statements do not run here; query runs one read-only SELECT (SHOW and DESCRIBE too) over the lake",
			ErrRefused, statementKind(sql))
	case len(s.Statements) != 1:
		return fmt.Errorf("query: %w: %d statements; query runs one read-only SELECT at a time", ErrRefused, len(s.Statements))
	}
	return nil
}

// statements counts the statements of sql: the text between semicolons
// outside quotes and comments that holds more than blanks and comments.
func statements(sql string) int {
	n, content := 0, false
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '\'' || c == '"':
			for i++; i < len(sql) && sql[i] != c; i++ {
			}
			content = true
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				i = len(sql)
			} else {
				i += end + 3
			}
		case c == ';':
			if content {
				n++
			}
			content = false
		case c != ' ' && c != '\t' && c != '\n' && c != '\r':
			content = true
		}
	}
	if content {
		n++
	}
	return n
}

var (
	leadingComments = regexp.MustCompile(`^(\s+|--[^\n]*\n?|/\*(?s:.*?)\*/)*`)
	firstWords      = regexp.MustCompile(`^[A-Za-z_]+(\s+(OR\s+REPLACE\s+)?(TEMP(ORARY)?\s+)?[A-Za-z_]+)?`)
)

// statementKind names a statement by its first keyword (two for CREATE,
// DROP, ALTER and the like: "CREATE TABLE").
func statementKind(sql string) string {
	s := leadingComments.ReplaceAllString(sql, "")
	w := strings.Fields(strings.ToUpper(firstWords.FindString(s)))
	switch {
	case len(w) == 0:
		return "these"
	case len(w) > 1 && (w[0] == "CREATE" || w[0] == "DROP" || w[0] == "ALTER"):
		return w[0] + " " + w[len(w)-1]
	}
	return w[0]
}

// lockDown turns the session into the sandbox once every view is
// attached: unqualified names resolve in the lake's namespaces (SHOW
// TABLES lists them), external access is off but for the files the views
// read, and no setting can change after.
func (d *duck) lockDown(ctx context.Context, namespaces []string) error {
	search := append(append([]string{}, namespaces...), "main")
	paths := make([]string, len(d.read))
	for i, p := range d.read {
		paths[i] = quoteString(p)
	}
	for _, q := range []string{
		"SET search_path = " + quoteString(strings.Join(search, ",")),
		"SET allowed_paths = [" + strings.Join(paths, ", ") + "]",
		"SET enable_external_access = false",
		"SET lock_configuration = true",
	} {
		if _, err := d.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("query: lock the session down: %w", err)
		}
	}
	return nil
}
