package marts

import (
	"context"
	"embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// Identifiers of the gold marts.
const (
	WikiActivityHourly  = "gold.wiki_activity_hourly"
	TopEditorsDaily     = "gold.top_editors_daily"
	EditorSessionsDaily = "gold.editor_sessions_daily"
	HotPages            = "gold.hot_pages"
)

// GoldTables lists the gold marts in build order.
var GoldTables = []string{WikiActivityHourly, TopEditorsDaily, EditorSessionsDaily, HotPages}

// mart is one gold table: the embedded SQL that builds it and the Arrow
// schema (with Iceberg field ids) it is written with. The SQL's columns must
// match the schema's names and order.
type mart struct {
	ident  string
	file   string
	schema *arrow.Schema
	// dayCol is the column whose UTC day the mart's rows are a function
	// of (one day of silver each); "" for hot_pages, rebuilt whole every
	// time. order is the mart's ORDER BY, for the rows a Refresh keeps
	// merged with the rows it rebuilt.
	dayCol, order string
	// sessions: the mart reads silver.editor_sessions (else silver.edits).
	sessions bool
	// byHours: every row is a function of one hour of silver.edits and the
	// SQL reads only the hours from getvariable('hours_from') to
	// getvariable('hours_to'), so a refresh builds it a few hours at a time
	// (chunks.go).
	byHours bool
	// prepare runs before the mart's SQL (nil: nothing to prepare).
	prepare func(ctx context.Context, d *duck) error
}

var (
	tsUTC   = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	str     = arrow.BinaryTypes.String
	i32     = arrow.PrimitiveTypes.Int32
	i64     = arrow.PrimitiveTypes.Int64
	f64     = arrow.PrimitiveTypes.Float64
	date    = arrow.FixedWidthTypes.Date32
	boolean = arrow.FixedWidthTypes.Boolean
)

// col is a field spec for schemaOf; a name ending in "?" is nullable.
type col struct {
	name string
	typ  arrow.DataType
}

// schemaOf builds an Arrow schema whose fields carry Iceberg field ids 1..n
// ("PARQUET:field_id"), as iceberg-go writes them.
func schemaOf(cols ...col) *arrow.Schema {
	fs := make([]arrow.Field, len(cols))
	for i, c := range cols {
		name, nullable := c.name, false
		if n := len(name); n > 0 && name[n-1] == '?' {
			name, nullable = name[:n-1], true
		}
		fs[i] = arrow.Field{Name: name, Type: c.typ, Nullable: nullable,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(i + 1)})}
	}
	return arrow.NewSchema(fs, nil)
}

// marts are the four built-in marts: models shipped in the binary, whose
// name, unit and key come from their files' headers (ParseModel, as a
// user's model), and whose Arrow schema (exact types, required columns)
// and build escapes are declared here: the hourly mart is built a few
// hours at a time, hot_pages after its prepare step over the files that
// reach into its window, and the units of each follow silver's files
// (scope.go).
var marts = builtins(
	builtin{"sql/wiki_activity_hourly.sql", schemaOf(
		col{"wiki", str}, col{"hour", tsUTC}, col{"edits", i64}, col{"new_pages", i64},
		col{"bot_edits", i64}, col{"human_edits", i64}, col{"editors", i64},
		col{"bytes_added", i64}, col{"bytes_removed", i64}), false, nil},
	builtin{"sql/top_editors_daily.sql", schemaOf(
		col{"day", date}, col{"wiki", str}, col{"rank", i32}, col{"user", str}, col{"bot", boolean},
		col{"edits", i64}, col{"bytes_changed", i64}), false, nil},
	builtin{"sql/editor_sessions_daily.sql", schemaOf(
		col{"day", date}, col{"sessions", i64}, col{"editors", i64}, col{"edits", i64},
		col{"median_session_s", f64}, col{"p95_session_s", f64}, col{"edits_per_session", f64},
		col{"bot_sessions", i64}, col{"human_sessions", i64}, col{"bot_edits", i64}, col{"human_edits", i64}), true, nil},
	builtin{"sql/hot_pages.sql", schemaOf(
		col{"time_window", str}, col{"rank", i32}, col{"wiki", str}, col{"title", str},
		col{"edits", i64}, col{"editors", i64}, col{"last_edit", tsUTC},
		col{"window_start", tsUTC}, col{"as_of", tsUTC}), false, prepareHotPages},
)

// builtin is what the binary declares of a built-in mart beyond its file.
type builtin struct {
	file     string
	schema   *arrow.Schema
	sessions bool
	prepare  func(ctx context.Context, d *duck) error
}

// builtins reads each built-in mart's header; a header that does not
// parse is a bug of the binary (TestBuiltinMartsAreModels).
func builtins(bs ...builtin) []mart {
	out := make([]mart, len(bs))
	for i, b := range bs {
		src, err := readSQL(b.file)
		if err != nil {
			panic(err)
		}
		md, err := parseHeader(b.file, src)
		if err != nil {
			panic(err)
		}
		mt := mart{ident: md.Ident, file: b.file, schema: b.schema, sessions: b.sessions, prepare: b.prepare,
			dayCol: md.Unit.Col, byHours: md.Unit.Kind == UnitHour}
		if md.Unit.Kind != UnitTable {
			order := []string{md.Unit.Col}
			for _, k := range md.Key {
				if k != md.Unit.Col {
					order = append(order, k)
				}
			}
			mt.order = strings.Join(order, ", ")
		}
		out[i] = mt
	}
	return out
}

// GoldSchema returns the Arrow schema a gold mart is written with.
func GoldSchema(ident string) (*arrow.Schema, error) {
	if m, ok := martOf(ident); ok {
		return m.schema, nil
	}
	return nil, fmt.Errorf("gold schema of %q: %w", ident, ErrNoTable)
}

// martOf returns the gold mart named ident.
func martOf(ident string) (mart, bool) {
	for _, m := range marts {
		if m.ident == ident {
			return m, true
		}
	}
	return mart{}, false
}

func (m mart) sql() (string, error) { return readSQL(m.file) }

// readSQL returns the embedded SQL file named file (a path under sql/).
func readSQL(file string) (string, error) {
	b, err := sqlFiles.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	return string(b), nil
}
