package marts

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/table"
)

// What each table of this package holds, column by column: the reference
// for readers (docs/tables.md is generated from it, and a test fails when
// a column has no entry).
var tableDocs = map[string]struct {
	comment string
	columns map[string]string
}{
	WikiActivityHourly: {"per wiki and UTC hour of silver.edits: edits, new pages, bots against humans, editors, bytes", map[string]string{
		"wiki": "wiki database name", "hour": "the UTC hour (its start)", "edits": "edit and new-page events",
		"new_pages": "new-page events", "bot_edits": "events flagged as a bot's", "human_edits": "events not flagged as a bot's",
		"editors": "distinct editors", "bytes_added": "sum of the positive byte deltas",
		"bytes_removed": "sum of the negative byte deltas, as a positive number"}},
	TopEditorsDaily: {"per wiki and UTC day of silver.edits, the editors with the most edits (top N, default 10)", map[string]string{
		"day": "the UTC day", "wiki": "wiki database name", "rank": "1 for the most edits (ties by bytes changed, then name)",
		"user": "editor's user name (or IP address)", "bot": "the editor's edits are flagged as a bot's",
		"edits": "the editor's edits that day on that wiki", "bytes_changed": "sum of the absolute byte deltas"}},
	EditorSessionsDaily: {"per UTC day of session start, from silver.editor_sessions", map[string]string{
		"day": "the UTC day the sessions started", "sessions": "sessions", "editors": "distinct editors",
		"edits": "edits in those sessions", "median_session_s": "median session length, seconds (interpolated)",
		"p95_session_s": "95th percentile session length, seconds (interpolated)", "edits_per_session": "edits / sessions",
		"bot_sessions": "sessions of bot editors", "human_sessions": "sessions of other editors",
		"bot_edits": "edits in bot sessions", "human_edits": "edits in other sessions"}},
	HotPages: {"the most edited pages of the last hour and the last day before the newest silver edit", map[string]string{
		"time_window": "last_hour or last_day", "rank": "1 for the most edits in the window", "wiki": "wiki database name",
		"title": "page title", "edits": "edits in the window", "editors": "distinct editors in the window",
		"last_edit": "event time of the page's newest edit", "window_start": "the window's start (exclusive)",
		"as_of": "the window's end: the newest silver event time"}},
	OpsRuns: {"one row per job of the marts' scheduler (refresh, rebuild, check, compact, expire, orphans, ops-retention)", map[string]string{
		"run_id": "the run's id (job and start)", "job": "the job", "started": "when it started", "duration_ms": "how long it took",
		"status": "ok or failed", "error": "why it failed", "detail": "what it did"}},
	OpsAssetChecks: {"one row per asset check per refresh or check run", map[string]string{
		"run_id": "the run that ran it (ops.runs)", "checked_at": "when it ran", "check_name": "the check",
		"asset": "the table it checks", "passed": "whether it passed", "observed": "the headline figure it found",
		"expected": "the figure it wants", "numbers": "every figure it computed (JSON)", "message": "what it found, in words"}},
}

// Describe returns what a table of this package (a gold mart, ops.runs,
// ops.asset_checks) holds and its columns, as table.Describe does for the
// streamed tables.
func Describe(ident string) (string, []table.Column, error) {
	var sc *arrow.Schema
	switch ident {
	case OpsRuns:
		sc = RunsSchema
	case OpsAssetChecks:
		sc = AssetChecksSchema
	default:
		s, err := GoldSchema(ident)
		if err != nil {
			return "", nil, fmt.Errorf("describe %q: %w", ident, err)
		}
		sc = s
	}
	d := tableDocs[ident]
	var cols []table.Column
	for _, f := range sc.Fields() {
		cols = append(cols, table.Column{Name: f.Name, Type: icebergType(f.Type), Nullable: f.Nullable, Doc: d.columns[f.Name]})
	}
	return d.comment, cols, nil
}

// icebergType names an Arrow type of this package's schemas as Iceberg
// (and the reference) does.
func icebergType(t arrow.DataType) string {
	switch t.ID() {
	case arrow.STRING:
		return "string"
	case arrow.INT32:
		return "int"
	case arrow.INT64:
		return "long"
	case arrow.FLOAT64:
		return "double"
	case arrow.BOOL:
		return "boolean"
	case arrow.DATE32:
		return "date"
	case arrow.TIMESTAMP:
		return "timestamptz"
	}
	return strings.ToLower(t.String())
}
