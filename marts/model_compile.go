package marts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
	duckdb "github.com/duckdb/duckdb-go/v2"

	"lakehouse/table"
)

// Compiling a model checks it against the lake's schemas without reading
// a row: DuckDB parses it (json_serialize_sql: one SELECT, the tables it
// names), the tables it reads must be model inputs (sources), models are
// ordered by what they read (a cycle is refused), and DESCRIBE of the
// SELECT over empty views of its inputs gives its columns, of which the
// unit's and every check's must be there. Nothing is built.

// grain orders how finely a source's rows are placed in time: a model may
// read a source whose grain is at most its own unit's.
type grain int

const (
	grainEvent grain = iota // silver: an event time per row
	grainHour
	grainDay
	grainTable
)

func grainOf(u ModelUnit) grain {
	switch u.Kind {
	case UnitHour:
		return grainHour
	case UnitDay:
		return grainDay
	}
	return grainTable
}

// source is a table a model may read.
type source struct {
	ident   string
	grain   grain
	timeCol string // the column a unit of it is cut by ("" at table grain)
	schema  *iceberg.Schema
	model   *compiled // nil for silver and the built-in marts
}

// baseSources are the tables every model may read, with the lake's
// schemas of silver (silver: as planned).
func baseSources(edits, sessions *iceberg.Schema) (map[string]*source, error) {
	out := map[string]*source{
		table.SilverEdits:    {ident: table.SilverEdits, grain: grainEvent, timeCol: "event_time", schema: edits},
		table.EditorSessions: {ident: table.EditorSessions, grain: grainEvent, timeCol: "session_start", schema: sessions},
	}
	for _, mt := range marts {
		sc, err := icebergSchemaOf(mt.schema)
		if err != nil {
			return nil, err
		}
		s := &source{ident: mt.ident, grain: grainTable, schema: sc}
		switch unitOf(mt) {
		case unitHour:
			s.grain, s.timeCol = grainHour, mt.dayCol
		case unitDay:
			s.grain, s.timeCol = grainDay, mt.dayCol
		}
		out[mt.ident] = s
	}
	return out, nil
}

// compiled is a model checked against the lake: what it reads and the
// schema it is written with.
type compiled struct {
	Model
	inputs []string      // the sources it reads, sorted
	schema *arrow.Schema // its columns, field ids 1..n, each nullable
	casts  string        // a SELECT list giving DuckDB's columns the schema's types
	def    uint64        // a hash of the file: another text is another model
	cols   []column      // DuckDB's names and types
}

// serializedStatement is the part of json_serialize_sql's tree walked for
// the tables a statement reads.
type parseError struct {
	Error    bool   `json:"error"`
	Type     string `json:"error_type"`
	Message  string `json:"error_message"`
	Position string `json:"position"`
}

// compileModels compiles models over the sources (base: baseSources),
// returning the ones that pass in build order (each after what it reads)
// and a *ModelError for each refused one. A model reading a refused model
// is refused too. d is a session of its own: empty views of every source
// are created in it.
func compileModels(ctx context.Context, d *duck, models []Model, base map[string]*source) ([]*compiled, []error) {
	var errs []error
	reads := map[string][]string{}
	byIdent := map[string]Model{}
	for _, m := range models {
		byIdent[m.Ident] = m
	}
	for _, m := range models {
		in, err := modelInputs(ctx, d, m, base, byIdent)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reads[m.Ident] = in
	}
	order, cycleErrs := buildOrder(models, reads)
	errs = append(errs, cycleErrs...)
	srcs := map[string]*source{}
	for k, v := range base {
		srcs[k] = v
		if err := d.attach(ctx, k, table.Files{Schema: v.schema}); err != nil {
			return nil, append(errs, fmt.Errorf("models: %w", err))
		}
	}
	// Unqualified names resolve in the namespaces of what models read.
	search := []string{}
	for _, id := range append(sortedKeys(base), sortedKeys(byIdent)...) {
		if ns := id[:strings.IndexByte(id, '.')]; !slices.Contains(search, ns) {
			search = append(search, ns)
			if _, err := d.db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+quoteIdent(ns)); err != nil {
				return nil, append(errs, fmt.Errorf("models: %w", err))
			}
		}
	}
	if _, err := d.db.ExecContext(ctx, "SET search_path = "+quoteString(strings.Join(append(search, "main"), ","))); err != nil {
		return nil, append(errs, fmt.Errorf("models: %w", err))
	}
	var out []*compiled
	for _, m := range order {
		c, err := compileOne(ctx, d, m, reads[m.Ident], srcs)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
		srcs[m.Ident] = &source{ident: m.Ident, grain: grainOf(m.Unit), timeCol: m.Unit.Col, model: c}
	}
	return out, errs
}

// modelInputs parses m and returns the sources and models it reads.
func modelInputs(ctx context.Context, d *duck, m Model, base map[string]*source, models map[string]Model) ([]string, error) {
	bad := func(pos int, rule, format string, a ...any) error {
		return &ModelError{File: m.File, Line: lineAt(m.SQL, pos), Rule: rule, Msg: fmt.Sprintf(format, a...)}
	}
	var raw string
	if err := d.db.QueryRowContext(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", m.SQL).Scan(&raw); err != nil {
		return nil, fmt.Errorf("models: parse %s: %w", m.File, err)
	}
	var pe parseError
	if err := json.Unmarshal([]byte(raw), &pe); err != nil {
		return nil, fmt.Errorf("models: parse %s: %w", m.File, err)
	}
	if pe.Error {
		if pe.Type == "parser" {
			pos, _ := strconv.Atoi(pe.Position)
			return nil, bad(pos, RuleSyntax, "%s", pe.Message)
		}
		if n := statements(m.SQL); n > 1 {
			return nil, bad(-1, RuleSelect, "%d statements; a model is one SELECT", n)
		}
		return nil, bad(-1, RuleSelect, "a %s statement; a model is one SELECT that writes nothing", statementKind(m.SQL))
	}
	var s serialized
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, fmt.Errorf("models: parse %s: %w", m.File, err)
	}
	if len(s.Statements) != 1 {
		return nil, bad(-1, RuleSelect, "%d statements; a model is one SELECT", len(s.Statements))
	}
	var tree any
	if err := json.Unmarshal(s.Statements[0], &tree); err != nil {
		return nil, fmt.Errorf("models: parse %s: %w", m.File, err)
	}
	refs, ctes, fn := tableRefs(tree)
	if fn.name != "" {
		return nil, bad(fn.pos, RuleInput, "reads the table function %s; a model reads the lake's tables and other models by name", fn.name)
	}
	var in []string
	for _, r := range refs {
		if r.schema == "" && ctes[r.name] {
			continue
		}
		ident, ok := resolveInput(r, base, models)
		if !ok {
			name := r.name
			if r.schema != "" {
				name = r.schema + "." + name
			}
			return nil, bad(r.pos, RuleInput, "reads %s, which is not a table a model can read (%s, or another model)", name, strings.Join(sortedKeys(base), ", "))
		}
		if ident == m.Ident {
			return nil, bad(r.pos, RuleCycle, "%s reads itself", m.Ident)
		}
		if !slices.Contains(in, ident) {
			in = append(in, ident)
		}
	}
	slices.Sort(in)
	return in, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// resolveInput finds the source or model a table reference names: by its
// namespace and name, or by a name that only one of them has.
func resolveInput(r tableRef, base map[string]*source, models map[string]Model) (string, bool) {
	name := strings.ToLower(r.name)
	if r.schema != "" {
		ident := strings.ToLower(r.schema) + "." + name
		_, ok1 := base[ident]
		_, ok2 := models[ident]
		return ident, ok1 || ok2
	}
	var found []string
	for ident := range base {
		if strings.HasSuffix(ident, "."+name) {
			found = append(found, ident)
		}
	}
	for ident := range models {
		if strings.HasSuffix(ident, "."+name) {
			found = append(found, ident)
		}
	}
	if len(found) != 1 {
		return "", false
	}
	return found[0], true
}

type tableRef struct {
	schema, name string
	pos          int
}

type tableFunc struct {
	name string
	pos  int
}

// tableRefs walks a serialized statement for the base tables it names,
// the names of its common table expressions, and the first table
// function it calls (read_csv and the like).
func tableRefs(tree any) (refs []tableRef, ctes map[string]bool, fn tableFunc) {
	ctes = map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			switch v["type"] {
			case "BASE_TABLE":
				s, _ := v["schema_name"].(string)
				n, _ := v["table_name"].(string)
				refs = append(refs, tableRef{schema: s, name: n, pos: location(v)})
			case "TABLE_FUNCTION":
				if fn.name == "" {
					f, _ := v["function"].(map[string]any)
					fn.name, _ = f["function_name"].(string)
					fn.pos = location(v)
				}
			}
			if cm, ok := v["cte_map"].(map[string]any); ok {
				if list, ok := cm["map"].([]any); ok {
					for _, e := range list {
						if kv, ok := e.(map[string]any); ok {
							if k, ok := kv["key"].(string); ok {
								ctes[k] = true
							}
						}
					}
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(tree)
	return refs, ctes, fn
}

// location is a node's query_location (-1 when it has none).
func location(v map[string]any) int {
	f, ok := v["query_location"].(float64)
	if !ok || f < 0 || f > 1<<40 {
		return -1
	}
	return int(f)
}

// lineAt is the 1-based line of byte offset pos in s (0 when pos < 0).
func lineAt(s string, pos int) int {
	if pos < 0 || pos > len(s) {
		return 0
	}
	return strings.Count(s[:pos], "\n") + 1
}

// buildOrder orders models so that each comes after the models it reads;
// models in a cycle (and those reading them) are refused, the cycle named.
func buildOrder(models []Model, reads map[string][]string) ([]Model, []error) {
	byIdent := map[string]Model{}
	for _, m := range models {
		if _, ok := reads[m.Ident]; ok {
			byIdent[m.Ident] = m
		}
	}
	const (
		unvisited = iota
		visiting
		done
		refused
	)
	state := map[string]int{}
	var order []Model
	var errs []error
	var visit func(id string, path []string) bool
	visit = func(id string, path []string) bool {
		switch state[id] {
		case done:
			return true
		case refused:
			return false
		case visiting:
			i := slices.Index(path, id)
			cycle := append(slices.Clone(path[i:]), id)
			m := byIdent[id]
			errs = append(errs, &ModelError{File: m.File, Rule: RuleCycle, Msg: "models read each other: " + strings.Join(cycle, " -> ")})
			state[id] = refused
			return false
		}
		state[id] = visiting
		for _, in := range reads[id] {
			if _, isModel := byIdent[in]; !isModel {
				continue
			}
			if !visit(in, append(path, id)) {
				if state[id] != refused {
					m := byIdent[id]
					errs = append(errs, &ModelError{File: m.File, Rule: RuleInput, Msg: "reads " + in + ", which is refused"})
					state[id] = refused
				}
				return false
			}
		}
		if state[id] == refused {
			return false
		}
		state[id] = done
		order = append(order, byIdent[id])
		return true
	}
	for _, m := range models {
		if _, ok := byIdent[m.Ident]; ok {
			visit(m.Ident, nil)
		}
	}
	return order, errs
}

var lineRe = regexp.MustCompile(`LINE (\d+):`)

// compileOne describes m's SELECT over empty views of its inputs and
// checks its unit and checks against the columns it gives.
func compileOne(ctx context.Context, d *duck, m Model, inputs []string, srcs map[string]*source) (*compiled, error) {
	bad := func(line int, rule, format string, a ...any) error {
		return &ModelError{File: m.File, Line: line, Rule: rule, Msg: fmt.Sprintf(format, a...)}
	}
	for _, in := range inputs {
		s, ok := srcs[in]
		if !ok {
			return nil, bad(0, RuleInput, "reads %s, which is refused", in)
		}
		if s.grain > grainOf(m.Unit) {
			return nil, bad(m.unitLine, RuleUnit, "unit %s is finer than what %s is built by; a model's unit is at least its inputs' (table over day over hour)", m.Unit, in)
		}
	}
	cols, err := describe(ctx, d, m.SQL)
	if err != nil {
		return nil, duckModelError(m, RuleColumns, err)
	}
	c := &compiled{Model: m, inputs: inputs, cols: cols}
	h := fnv.New64a()
	h.Write([]byte(m.Ident + "\x00" + m.SQL))
	c.def = h.Sum64()
	fields := make([]arrow.Field, len(cols))
	casts := make([]string, len(cols))
	has := map[string]string{}
	for i, col := range cols {
		if !identRe.MatchString(col.name) {
			return nil, bad(0, RuleColumns, "column %q: name the columns in lower case letters, digits and _ (AS name)", col.name)
		}
		if _, dup := has[col.name]; dup {
			return nil, bad(0, RuleColumns, "two columns are named %s", col.name)
		}
		typ, cast, ok := goldType(col.typ)
		if !ok {
			return nil, bad(0, RuleType, "column %s is %s; gold holds VARCHAR, BOOLEAN, integers, DOUBLE, DATE and TIMESTAMPTZ (cast it)", col.name, col.typ)
		}
		has[col.name] = cast
		fields[i] = arrow.Field{Name: col.name, Type: typ, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(i + 1)})}
		casts[i] = fmt.Sprintf("CAST(%s AS %s) AS %s", quoteIdent(col.name), cast, quoteIdent(col.name))
	}
	c.schema, c.casts = arrow.NewSchema(fields, nil), strings.Join(casts, ", ")
	if m.Unit.Kind != UnitTable {
		typ, ok := has[m.Unit.Col]
		switch {
		case !ok:
			return nil, bad(m.unitLine, RuleUnit, "unit %s: the SELECT has no column %s", m.Unit, m.Unit.Col)
		case m.Unit.Kind == UnitHour && typ != "TIMESTAMPTZ":
			return nil, bad(m.unitLine, RuleUnit, "unit %s: %s is %s; an hour is cut from a TIMESTAMPTZ", m.Unit, m.Unit.Col, typ)
		case m.Unit.Kind == UnitDay && typ != "TIMESTAMPTZ" && typ != "DATE":
			return nil, bad(m.unitLine, RuleUnit, "unit %s: %s is %s; a day is cut from a DATE or a TIMESTAMPTZ", m.Unit, m.Unit.Col, typ)
		}
	}
	// An empty view of the model for what reads it, and to bind the checks.
	if err := d.createEmpty(ctx, m.Ident, cols); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	for _, chk := range m.Checks {
		if err := compileCheck(ctx, d, c, chk, has, srcs); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// compileCheck refuses a check over a column the model does not have, or
// a reconciles whose table or aggregates do not bind.
func compileCheck(ctx context.Context, d *duck, c *compiled, chk ModelCheck, has map[string]string, srcs map[string]*source) error {
	bad := func(format string, a ...any) error {
		return &ModelError{File: c.File, Line: chk.Line, Rule: RuleCheck, Msg: chk.String() + ": " + fmt.Sprintf(format, a...)}
	}
	switch chk.Kind {
	case CheckUnique, CheckNotNull:
		for _, a := range chk.Args {
			if _, ok := has[a]; !ok {
				return bad("the model has no column %s", a)
			}
		}
	case CheckAcceptedValues:
		if _, ok := has[chk.Args[0]]; !ok {
			return bad("the model has no column %s", chk.Args[0])
		}
		q := fmt.Sprintf("SELECT %s IN (%s) FROM %s", quoteIdent(chk.Args[0]), strings.Join(chk.Args[1:], ", "), qualified(c.Ident))
		if _, err := describe(ctx, d, q); err != nil {
			return bad("%s", duckMessage(err))
		}
	case CheckReconciles:
		other := strings.ToLower(chk.Args[1])
		s, ok := srcs[other]
		switch {
		case !ok:
			return bad("%s is not a table a model can read, or a model built before this one", other)
		case s.grain > grainOf(c.Unit):
			return bad("%s is built by a coarser unit than %s", other, c.Unit)
		}
		if _, err := describe(ctx, d, fmt.Sprintf("SELECT %s FROM %s", chk.Args[0], qualified(c.Ident))); err != nil {
			return bad("%s", duckMessage(err))
		}
		if _, err := describe(ctx, d, fmt.Sprintf("SELECT %s FROM %s", chk.Args[2], qualified(other))); err != nil {
			return bad("%s", duckMessage(err))
		}
	}
	return nil
}

// describe returns the columns a query gives, without running it.
func describe(ctx context.Context, d *duck, q string) ([]column, error) {
	rows, err := d.db.QueryContext(ctx, "DESCRIBE "+q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []column
	for rows.Next() {
		var name, typ string
		var rest [4]any
		if err := rows.Scan(&name, &typ, &rest[0], &rest[1], &rest[2], &rest[3]); err != nil {
			return nil, err
		}
		out = append(out, column{name: name, typ: typ})
	}
	return out, rows.Err()
}

// duckModelError is a DuckDB error about m's SQL as a ModelError: its
// message's first line, at the line DuckDB points to.
func duckModelError(m Model, rule string, err error) error {
	msg := duckMessage(err)
	line := 0
	var de *duckdb.Error
	if errors.As(err, &de) {
		if l := lineRe.FindStringSubmatch(de.Msg); l != nil {
			line, _ = strconv.Atoi(l[1])
		}
		if de.Type == duckdb.ErrorTypeCatalog {
			rule = RuleInput
		}
	}
	return &ModelError{File: m.File, Line: line, Rule: rule, Msg: msg}
}

// duckMessage is the first line of a DuckDB error.
func duckMessage(err error) string {
	msg := err.Error()
	var de *duckdb.Error
	if errors.As(err, &de) {
		msg = de.Msg
	}
	first, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	return first
}

// goldType maps a DuckDB column type to the Arrow type a model's column
// is written with and the DuckDB type it is cast to first.
func goldType(t string) (arrow.DataType, string, bool) {
	switch {
	case t == "VARCHAR":
		return str, "VARCHAR", true
	case t == "BOOLEAN":
		return boolean, "BOOLEAN", true
	case t == "BIGINT" || t == "HUGEINT" || t == "UBIGINT" || t == "UINTEGER" || t == "UHUGEINT":
		return i64, "BIGINT", true
	case t == "INTEGER" || t == "SMALLINT" || t == "TINYINT" || t == "USMALLINT" || t == "UTINYINT":
		return i32, "INTEGER", true
	case t == "DOUBLE" || t == "FLOAT" || strings.HasPrefix(t, "DECIMAL"):
		return f64, "DOUBLE", true
	case t == "DATE":
		return date, "DATE", true
	case t == "TIMESTAMP WITH TIME ZONE" || t == "TIMESTAMP":
		return tsUTC, "TIMESTAMPTZ", true
	}
	return nil, "", false
}

// createEmpty makes ident a view of no rows with cols.
func (d *duck) createEmpty(ctx context.Context, ident string, cols []column) error {
	if i := strings.LastIndexByte(ident, '.'); i > 0 {
		if _, err := d.db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+quoteIdent(ident[:i])); err != nil {
			return fmt.Errorf("view %s: %w", ident, err)
		}
	}
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = fmt.Sprintf("CAST(NULL AS %s) AS %s", c.typ, quoteIdent(c.name))
	}
	if _, err := d.db.ExecContext(ctx, "CREATE OR REPLACE VIEW "+qualified(ident)+" AS SELECT "+strings.Join(sel, ", ")+" WHERE false"); err != nil {
		return fmt.Errorf("view %s: %w", ident, err)
	}
	return nil
}

// icebergSchemaOf is the Iceberg schema an Overwrite of schema creates
// (field ids 1..n).
func icebergSchemaOf(schema *arrow.Schema) (*iceberg.Schema, error) {
	sc, err := icetable.ArrowSchemaToIcebergWithFreshIDs(schema, false)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return sc, nil
}
