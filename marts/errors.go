package marts

import "errors"

// Errors returned by this package. Match them with errors.Is.
var (
	// ErrNoTable: a query named a table or schema that is not in the lake
	// (the message lists the tables that are).
	ErrNoTable = errors.New("no such table")
	// ErrBadSQL: DuckDB rejected the SQL (syntax, binding, types); the
	// wrapped message is DuckDB's.
	ErrBadSQL = errors.New("bad SQL")
	// ErrMemory: a query needed more memory than its limit
	// (QueryOptions.MemoryLimit) after spilling what it could.
	ErrMemory = errors.New("out of memory")
	// ErrFormat: Query was asked for an output format other than table,
	// csv or json.
	ErrFormat = errors.New("unknown output format")
	// ErrRefused: Query was given a statement that is not one read-only
	// SELECT (COPY, ATTACH, INSTALL, SET, CREATE TABLE, several
	// statements...); nothing was run. The message names the statement.
	ErrRefused = errors.New("statement refused")
	// ErrChecksFailed: Refresh rebuilt the marts but at least one asset
	// check failed; the Report holds each check's numbers.
	ErrChecksFailed = errors.New("asset checks failed")
	// ErrNotConsumed: a Protect hook's downstream stream has not consumed
	// any snapshot of the table yet, so none may be expired (not a failure).
	ErrNotConsumed = errors.New("downstream stream has consumed nothing yet")
)
