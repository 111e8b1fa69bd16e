package table

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
)

// The project's table identifiers ("namespace.name").
const (
	Bronze         = "bronze.recentchange"
	SilverEdits    = "silver.edits"
	EditorSessions = "silver.editor_sessions"
	StreamProgress = "ops.stream_progress"
	BronzeDLQ      = "bronze.recentchange_dlq"
)

// Tables lists the project's tables in creation order.
var Tables = []string{Bronze, SilverEdits, EditorSessions, StreamProgress, BronzeDLQ}

var (
	tsType = iceberg.PrimitiveTypes.TimestampTz
	str    = iceberg.PrimitiveTypes.String
	i32    = iceberg.PrimitiveTypes.Int32
	i64    = iceberg.PrimitiveTypes.Int64
	boolT  = iceberg.PrimitiveTypes.Bool
	binT   = iceberg.PrimitiveTypes.Binary
)

func req(id int, name string, t iceberg.Type, doc string) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: name, Type: t, Required: true, Doc: doc}
}

func opt(id int, name string, t iceberg.Type, doc string) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: name, Type: t, Required: false, Doc: doc}
}

// Iceberg schemas. Field ids are 1..n in column order, which is what the
// catalog assigns on create, so the ids below are the ids in the table.
// A column is renamed by changing its name here and keeping its id:
// EnsureTables renames it in existing tables (bronze's broker_partition and
// broker_offset were "partition" and "offset", SQL reserved words).
var (
	bronzeIce = iceberg.NewSchema(0,
		req(1, "broker_partition", i32, "broker partition"),
		req(2, "broker_offset", i64, "broker offset, dense per partition"),
		req(3, "broker_ts", tsType, "time the broker appended the event"),
		opt(4, "key", str, "broker message key"),
		req(5, "value", str, "raw event JSON exactly as received"),
		req(6, "ingest_ts", tsType, "time the bronze batch was written"),
	)
	bronzeDLQIce = iceberg.NewSchema(0,
		req(1, "broker_partition", i32, "partition of the dead-letter topic"),
		req(2, "broker_offset", i64, "offset in the dead-letter topic, dense per partition"),
		req(3, "broker_ts", tsType, "time the broker appended the dead letter (ingest time)"),
		req(4, "value", binT, "the event's bytes exactly as received: not always JSON or UTF-8"),
		req(5, "reason", str, "why the contract refused it"),
		opt(6, "source_id", str, "the SSE id the event came with (the source position)"),
		opt(7, "source_url", str, "the stream it came from"),
		req(8, "ingest_ts", tsType, "time the DLQ batch was written"),
	)
	silverEditsIce = iceberg.NewSchema(0,
		req(1, "event_id", str, "meta.id (dedup key)"),
		req(2, "event_time", tsType, "timestamp: when the edit happened"),
		req(3, "intake_time", tsType, "meta.dt: when Wikimedia took the event in"),
		req(4, "wiki", str, "wiki database name (enwiki, commonswiki)"),
		req(5, "type", str, "edit or new"),
		req(6, "namespace", i32, "page namespace (0: articles)"),
		req(7, "title", str, "page title"),
		req(8, "user", str, "editor's user name (or IP address)"),
		req(9, "bot", boolT, "the edit is flagged as a bot's"),
		opt(10, "minor", boolT, "the edit is marked minor"),
		opt(11, "length_old", i64, "absent for new pages"),
		req(12, "length_new", i64, "page length after the edit, bytes"),
		req(13, "byte_delta", i64, "length_new - length_old (0 when old is absent: length_new)"),
		opt(14, "rev_old", i64, "absent for new pages"),
		req(15, "rev_new", i64, "revision id after the edit"),
		opt(16, "comment", str, "edit summary"),
		req(17, "server_name", str, "the wiki's host (en.wikipedia.org)"),
		req(18, "src_partition", i32, "bronze partition (lineage)"),
		req(19, "src_offset", i64, "bronze offset (lineage)"),
		req(20, "processed_time", tsType, "time the silver batch ran"),
	)
	editorSessionsIce = iceberg.NewSchema(0,
		req(1, "session_id", str, "the session's id: wiki, user and start"),
		req(2, "wiki", str, "wiki database name"),
		req(3, "user", str, "editor's user name (or IP address)"),
		req(4, "bot", boolT, "the editor's edits are flagged as a bot's"),
		req(5, "session_start", tsType, "event time of the session's first edit"),
		req(6, "session_end", tsType, "event time of its last edit"),
		req(7, "edits", i64, "edits in the session"),
		req(8, "pages", i64, "distinct titles"),
		req(9, "bytes_added", i64, "sum of the positive byte deltas"),
		req(10, "bytes_removed", i64, "sum of the negative byte deltas, as a positive number"),
		req(11, "processed_time", tsType, "time the sessions batch wrote it"),
	)
	streamProgressIce = iceberg.NewSchema(0,
		req(1, "query", str, "query name (bronze, silver, sessions)"),
		req(2, "query_id", str, "query run identity"),
		req(3, "batch_id", i64, "the query's batch id"),
		req(4, "started", tsType, "when the batch started"),
		req(5, "duration_ms", i64, "the batch's duration"),
		req(6, "commit_ms", i64, "of which committing to its table"),
		req(7, "rows_in", i64, "rows read from the source"),
		req(8, "rows_out", i64, "rows written"),
		req(9, "rows_dropped_by_watermark", i64, "rows dropped as late"),
		req(10, "duplicates_dropped", i64, "rows dropped as copies of an event id seen before"),
		req(11, "unparseable", i64, "rows that could not be parsed"),
		req(12, "end_offsets", str, "where the batch ended in its source (JSON)"),
		req(13, "lag", i64, "records waiting in the source after the batch"),
		opt(14, "watermark", tsType, "the event-time watermark the batch used (silver, sessions)"),
		req(15, "query_id_changes", i64, "times the query id changed (a checkpoint lost)"),
	)
)

// Arrow schemas of the project's tables, with Iceberg field ids in each
// field's metadata ("PARQUET:field_id"). Build records from these directly:
// timestamps are arrow.Timestamp(us, "UTC"), strings arrow.String, and a
// required column is non-nullable.
var (
	BronzeSchema         = mustArrow(bronzeIce)
	SilverEditsSchema    = mustArrow(silverEditsIce)
	EditorSessionsSchema = mustArrow(editorSessionsIce)
	StreamProgressSchema = mustArrow(streamProgressIce)
	BronzeDLQSchema      = mustArrow(bronzeDLQIce)
)

// tableDef describes one project table.
type tableDef struct {
	schema  *iceberg.Schema
	arrow   *arrow.Schema
	dayOf   string // column partitioned by day; "" = unpartitioned
	comment string
}

var defs = map[string]tableDef{
	Bronze:         {bronzeIce, BronzeSchema, "broker_ts", "raw Wikimedia recentchange events, one row per broker offset"},
	SilverEdits:    {silverEditsIce, SilverEditsSchema, "event_time", "parsed, deduplicated edit and new events"},
	EditorSessions: {editorSessionsIce, EditorSessionsSchema, "session_start", "per-editor activity sessions"},
	StreamProgress: {streamProgressIce, StreamProgressSchema, "", "one row per micro-batch of every query"},
	BronzeDLQ:      {bronzeDLQIce, BronzeDLQSchema, "broker_ts", "events the ingest contract refused, one row per dead-letter offset, with the reason"},
}

// Column describes one column of a table for a reader: its name, its
// Iceberg type, whether it may be null, and what it holds.
type Column struct {
	Name     string
	Type     string
	Nullable bool
	Doc      string
}

// Describe returns what a project table holds and its columns, from the
// schema the table is created with (docs/tables.md is generated from it).
func Describe(ident string) (string, []Column, error) {
	d, ok := defs[ident]
	if !ok {
		return "", nil, fmt.Errorf("describe %q: %w", ident, ErrUnknownTable)
	}
	var cols []Column
	for _, f := range d.schema.Fields() {
		cols = append(cols, Column{Name: f.Name, Type: f.Type.String(), Nullable: !f.Required, Doc: f.Doc})
	}
	return d.comment, cols, nil
}

// Schema returns the Arrow schema of a project table.
func Schema(ident string) (*arrow.Schema, error) {
	d, ok := defs[ident]
	if !ok {
		return nil, fmt.Errorf("schema of %q: %w", ident, ErrUnknownTable)
	}
	return d.arrow, nil
}

// IcebergSchema returns the Iceberg schema of a project table.
func IcebergSchema(ident string) (*iceberg.Schema, error) {
	d, ok := defs[ident]
	if !ok {
		return nil, fmt.Errorf("schema of %q: %w", ident, ErrUnknownTable)
	}
	return d.schema, nil
}

func (d tableDef) partitionSpec() (*iceberg.PartitionSpec, error) {
	if d.dayOf == "" {
		return iceberg.UnpartitionedSpec, nil
	}
	f, ok := d.schema.FindFieldByName(d.dayOf)
	if !ok {
		return nil, fmt.Errorf("partition column %q missing", d.dayOf)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{f.ID}, FieldID: 1000, Name: d.dayOf + "_day", Transform: iceberg.DayTransform{},
	})
	return &spec, nil
}

func mustArrow(sc *iceberg.Schema) *arrow.Schema {
	s, err := icetable.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		panic(fmt.Sprintf("arrow schema: %v", err))
	}
	return s
}

// parseIdent splits "namespace.name" (the last dot separates the name).
func parseIdent(ident string) (icetable.Identifier, error) {
	i := strings.LastIndexByte(ident, '.')
	if i <= 0 || i == len(ident)-1 {
		return nil, fmt.Errorf("table %q: %w: want namespace.name", ident, ErrUnknownTable)
	}
	return icetable.Identifier{ident[:i], ident[i+1:]}, nil
}
