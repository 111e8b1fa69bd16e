package marts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"lakehouse/internal/fault"
	"lakehouse/table"
)

// A refresh builds the user's models after the four built-in marts, in
// a DuckDB session of their own, each model in the order of what it reads
// (a model names tables only: compile refuses table functions such as
// read_csv, and anything but one SELECT).
// Like the built-ins, a model is rebuilt only in the units whose inputs
// changed since it was written, by the same fingerprint rule kept in the
// lake: a unit's fingerprint is that of the silver files it covers, or
// what a built-in mart or a model recorded it was built from (a mart
// rebuilt for a unit changes the unit of what reads it). The model's own
// record (propModel) is written in the commit that writes its rows, and
// counts only while the table holds what that commit left, the file's text
// is the same and the unit is the same. A unit rebuilt reads views of its
// inputs restricted to the unit, so a model's rows of unit U must come
// from its inputs' rows of U (its unit column the day or hour of theirs);
// rows outside the units rebuilt are refused, never merged. The rebuilt
// units replace the old ones in one overwrite: a crash leaves the model
// as it was or as rebuilt.

// ModelReport is what one refresh did to one user model.
type ModelReport struct {
	Ident string
	// Scope is what was rebuilt: "N days", "all (why)", or "not built
	// (why)".
	Scope string
	Rows  int64
	// Statements is how many statements built it (more than one: a few
	// units at a time).
	Statements int
}

// modelRun is what one refresh did to one model.
type modelRun struct {
	ident  string
	scope  units
	chunks int // statements its SELECT ran as
	wrote  bool
	rows   int64
	err    error
	checks []Check
}

// modelSet is the models of a refresh, compiled against the lake.
type modelSet struct {
	built   []*compiled
	refused []error
}

// buildModels compiles and builds every model (Config.Models) after the
// built-in marts, records nothing itself, and returns the checks to record
// with the refresh's: per model that was refused or could not be built a
// failed check ("model" of it), else its checks. Models whose file is
// gone are dropped.
func (m *Marts) buildModels(ctx context.Context, runID string, pre map[string]table.Files) ([]Check, []ModelReport, error) {
	var rows []ModelReport
	var checks []Check
	now := time.Now().UTC()
	for _, e := range m.cfg.RefusedModels {
		checks = append(checks, refusedCheck(e, now))
	}
	if len(m.cfg.Models) == 0 {
		m.logRefused(checks)
		return checks, rows, m.dropGoneModels(ctx)
	}
	d, err := m.openDuck(ctx)
	if err != nil {
		return nil, rows, err
	}
	defer d.Close()
	set, in, err := m.compileAndPlan(ctx, d, pre)
	if err != nil {
		return nil, rows, err
	}
	for _, e := range set.refused {
		checks = append(checks, refusedCheck(e, now))
	}
	m.logRefused(checks)
	failed := map[string]string{}
	for _, c := range set.built {
		r := modelRun{ident: c.Ident}
		for _, dep := range c.inputs {
			if why, ok := failed[dep]; ok {
				r.err = fmt.Errorf("not built: it reads %s, which was not (%s)", dep, why)
			}
		}
		if r.err == nil {
			r = m.buildModel(ctx, d, c, in, runID)
			if r.err == nil && r.wrote {
				fault.Hit(hookAfterGoldWrite)
				// What reads it sees what was written, and its record.
				p, err := m.planSource(ctx, &source{ident: c.Ident, grain: grainOf(c.Unit), timeCol: c.Unit.Col, model: c}, nil)
				if err != nil {
					r.err = err
				} else {
					in[c.Ident] = p
				}
			}
		}
		if ctx.Err() != nil {
			return checks, rows, ctx.Err()
		}
		if r.err != nil {
			rows = append(rows, ModelReport{Ident: c.Ident, Scope: "not built (" + r.err.Error() + ")"})
			failed[c.Ident] = r.err.Error()
			m.cfg.Logger.Error("marts: model not built", "model", c.Ident, "file", c.File, "err", r.err)
			checks = append(checks, Check{Name: c.Ident + ": built", Asset: c.Ident, Observed: 1, Expected: 0,
				Message: r.err.Error(), CheckedAt: time.Now().UTC(), Numbers: map[string]int64{}})
			continue
		}
		rows = append(rows, ModelReport{Ident: c.Ident, Scope: r.scope.describe(c.Unit), Rows: r.rows, Statements: r.chunks})
		checks = append(checks, r.checks...)
	}
	return checks, rows, m.dropGoneModels(ctx)
}

// ModelTables lists the tables of the user's models (Config.Models), in
// the order of their files.
func (m *Marts) ModelTables() []string {
	out := make([]string, len(m.cfg.Models))
	for i, md := range m.cfg.Models {
		out[i] = md.Ident
	}
	return out
}

// logRefused logs, once per process, each model refused.
func (m *Marts) logRefused(refused []Check) {
	if m.refusedLogged {
		return
	}
	m.refusedLogged = true
	for _, c := range refused {
		m.cfg.Logger.Error("marts: model refused; the other models and the streams run on", "err", c.Message)
	}
}

// refusedCheck is the failed check standing for a model refused at
// compile time.
func refusedCheck(e error, at time.Time) Check {
	name, file := "model", ""
	var me *ModelError
	if errors.As(e, &me) {
		file = me.File
		name = "model " + filepath.Base(me.File)
	}
	return Check{Name: name + ": refused", Asset: file, Observed: 1, Expected: 0, Message: e.Error(), CheckedAt: at, Numbers: map[string]int64{}}
}

// compileAndPlan compiles the models over the lake's schemas and plans
// every source they read.
func (m *Marts) compileAndPlan(ctx context.Context, d *duck, pre map[string]table.Files) (modelSet, map[string]planned, error) {
	in := map[string]planned{}
	var base map[string]*source
	for _, id := range []string{table.SilverEdits, table.EditorSessions} {
		col := "event_time"
		if id == table.EditorSessions {
			col = "session_start"
		}
		p, err := m.planSource(ctx, &source{ident: id, grain: grainEvent, timeCol: col}, pre)
		if err != nil {
			return modelSet{}, nil, err
		}
		in[id] = p
	}
	base, err := baseSources(in[table.SilverEdits].files.Schema, in[table.EditorSessions].files.Schema)
	if err != nil {
		return modelSet{}, nil, err
	}
	for id, s := range base {
		p, ok := in[id]
		if !ok {
			if p, err = m.planSource(ctx, s, pre); err != nil {
				return modelSet{}, nil, err
			}
		}
		p.src = s
		in[id] = p
	}
	var set modelSet
	if err := exec(ctx, d, fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS model_prev; SET VARIABLE top_n = %d", m.cfg.TopN)); err != nil {
		return set, in, fmt.Errorf("models: %w", err)
	}
	set.built, set.refused = compileModels(ctx, d, m.cfg.Models, base)
	for _, c := range set.built {
		if _, err := d.db.ExecContext(ctx, "DROP VIEW IF EXISTS "+qualified(c.Ident)); err != nil {
			return set, in, fmt.Errorf("models: %w", err)
		}
	}
	for _, c := range set.built {
		p, err := m.planSource(ctx, &source{ident: c.Ident, grain: grainOf(c.Unit), timeCol: c.Unit.Col, model: c}, nil)
		if err != nil {
			return set, in, err
		}
		in[c.Ident] = p
	}
	return set, in, nil
}

// buildModel rebuilds the units of c whose inputs changed, writes the
// model with its record in one overwrite and runs its checks.
func (m *Marts) buildModel(ctx context.Context, d *duck, c *compiled, in map[string]planned, runID string) modelRun {
	r := modelRun{ident: c.Ident}
	step := unitStep(c.Unit)
	now, why := m.unitPrints(c, in)
	self := in[c.Ident]
	var prev prints
	if why == "" {
		st, w := readModelState(self.files, c)
		if w == "" {
			var err error
			if prev, err = decodePrints(st.Prints, step); err != nil {
				w = err.Error()
			}
		}
		why = w
	}
	r.scope = scopeOf(prev, why, now, now != nil)
	if now == nil {
		r.scope = rebuild(why)
	}
	if c.Unit.Kind == UnitTable && len(r.scope.list) > 0 {
		r.scope = rebuild("its inputs changed")
	}
	if !r.scope.full && len(r.scope.list) == 0 {
		// Nothing changed: the checks run over the table as it is.
		r.rows = self.files.Rows
		if r.err = d.attach(ctx, "model_prev.t", self.files); r.err != nil {
			return r
		}
		r.checks, r.err = m.modelChecks(ctx, d, c, in, r.scope, false)
		return r
	}
	if r.err = m.attachModelInputs(ctx, d, c, in, r.scope); r.err != nil {
		return r
	}
	if r.chunks, r.err = m.runModel(ctx, d, c, in, r.scope); r.err != nil {
		r.err = duckModelError(c.Model, RuleColumns, r.err)
		return r
	}
	if r.err = exec(ctx, d, "CREATE OR REPLACE TABLE main.model_new AS SELECT "+c.casts+" FROM main.model_raw"); r.err != nil {
		return r
	}
	all := "main.model_new"
	if !r.scope.full {
		filter := unitFilter(quoteIdent(c.Unit.Col), r.scope, step)
		var out int64
		if r.err = d.db.QueryRowContext(ctx, "SELECT count(*) FROM main.model_new WHERE NOT coalesce("+filter+", false)").Scan(&out); r.err != nil {
			return r
		}
		if out > 0 {
			r.err = &ModelError{File: c.File, Line: c.unitLine, Rule: RuleRows, Msg: fmt.Sprintf(
				"%d rows fall outside the %d %ss rebuilt: %s must be the %s of the input rows each was built from", out, len(r.scope.list), c.Unit.Kind, c.Unit.Col, c.Unit.Kind)}
			return r
		}
		if r.err = d.attach(ctx, "model_prev.t", self.files); r.err != nil {
			return r
		}
		if r.err = exec(ctx, d, "CREATE OR REPLACE TABLE main.model_all AS SELECT * FROM model_prev.t WHERE NOT ("+filter+") UNION ALL BY NAME SELECT * FROM main.model_new"); r.err != nil {
			return r
		}
		all = "main.model_all"
	}
	order := ""
	if c.Unit.Kind != UnitTable {
		order = " ORDER BY " + quoteIdent(c.Unit.Col)
	}
	rows, err := d.db.QueryContext(ctx, "SELECT "+quotedCols(c)+" FROM "+all+order)
	if err != nil {
		r.err = fmt.Errorf("read %s: %w", c.Ident, err)
		return r
	}
	recs, err := rowsToRecords(rows, c.schema)
	rows.Close()
	if err != nil {
		r.err = fmt.Errorf("read %s: %w", c.Ident, err)
		return r
	}
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for _, rec := range recs {
		r.rows += rec.NumRows()
	}
	file, _ := filepath.Abs(c.File)
	raw, err := json.Marshal(modelState{V: stateVersion, Run: runID, File: file, Def: strconv.FormatUint(c.def, 16),
		Unit: c.Unit.String(), Prints: encodePrints(now, step)})
	if err != nil {
		r.err = err
		return r
	}
	if r.err = m.lake.Overwrite(ctx, c.Ident, c.schema, recs, map[string]string{propModel: string(raw)}); r.err != nil {
		r.err = fmt.Errorf("write %s: %w", c.Ident, r.err)
		return r
	}
	r.wrote = true
	if r.err = exec(ctx, d, "CREATE OR REPLACE VIEW model_prev.t AS SELECT * FROM "+all); r.err != nil {
		return r
	}
	r.checks, r.err = m.modelChecks(ctx, d, c, in, r.scope, true)
	return r
}

// runModel runs c's SELECT into main.model_raw over its inputs as
// attached (restricted to us). A model by hour or day that reads silver
// only is run a few units at a time, each statement over at most
// Config.ChunkRows rows of its first input (buildChunked), as the hourly
// built-in mart is. It returns the statements run.
func (m *Marts) runModel(ctx context.Context, d *duck, c *compiled, in map[string]planned, us units) (int, error) {
	step := c.Unit.length()
	chunked := step > 0
	for _, id := range c.inputs {
		chunked = chunked && in[id].src.grain == grainEvent
	}
	if chunked {
		first := in[c.inputs[0]].src
		count := fmt.Sprintf("SELECT date_trunc('%s', %s) AS u, count(*) FROM %s GROUP BY u ORDER BY u", c.Unit.Kind, quoteIdent(first.timeCol), qualified(first.ident))
		chunks, err := d.unitChunks(ctx, count, step)
		if err != nil {
			return 0, err
		}
		if len(chunks) > 1 {
			err := d.buildChunked(ctx, "main.model_raw", c.SQL, chunks, func(from, to time.Time) error {
				return m.attachModelInputs(ctx, d, c, in, unitsIn(from, to, step))
			})
			return len(chunks), err
		}
	}
	return 1, exec(ctx, d, "CREATE OR REPLACE TABLE main.model_raw AS "+c.SQL)
}

// describe says what was rebuilt of a model by unit u.
func (us units) describe(u ModelUnit) string {
	switch {
	case us.full:
		return "all (" + us.reason + ")"
	case len(us.list) == 1:
		return "1 " + u.Kind
	}
	return fmt.Sprintf("%d %ss", len(us.list), u.Kind)
}

func exec(ctx context.Context, d *duck, q string) error {
	_, err := d.db.ExecContext(ctx, q)
	return err
}

func quotedCols(c *compiled) string {
	out := make([]string, len(c.cols))
	for i, col := range c.cols {
		out[i] = quoteIdent(col.name)
	}
	return strings.Join(out, ", ")
}

// attachModelInputs makes each input of c a view restricted to the units in
// us (every row when us is full).
func (m *Marts) attachModelInputs(ctx context.Context, d *duck, c *compiled, in map[string]planned, us units) error {
	for _, ident := range c.inputs {
		if err := attachSource(ctx, d, in[ident], us, c.Unit); err != nil {
			return err
		}
	}
	return nil
}

// attachSource attaches p's table restricted to units us of unit.
func attachSource(ctx context.Context, d *duck, p planned, us units, unit ModelUnit) error {
	f, where := p.files, "true"
	if !us.full && unit.Kind != UnitTable && p.src.timeCol != "" {
		step := unit.length()
		if p.src.grain == grainEvent {
			f = overlapping(f, us.list, step)
		}
		where = unitFilter(quoteIdent(p.src.timeCol), us, step)
	}
	return d.attachWhere(ctx, p.src.ident, f, where)
}

// dropGoneModels drops the model tables whose file is gone: a table with
// a model's record whose file no longer exists and that no model of this
// refresh writes.
func (m *Marts) dropGoneModels(ctx context.Context) error {
	idents, err := m.lake.Tables(ctx)
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	current := map[string]bool{}
	for _, md := range m.cfg.Models {
		current[md.Ident] = true
	}
	for _, id := range idents {
		ns := id[:strings.LastIndexByte(id, '.')]
		if current[id] || slices.Contains(applianceNamespaces, ns) || slices.Contains(GoldTables, id) {
			continue
		}
		props, err := m.lake.Properties(ctx, id)
		if err != nil {
			continue
		}
		raw, ok := props[propModel]
		if !ok {
			continue
		}
		var st modelState
		if json.Unmarshal([]byte(raw), &st) != nil || st.File == "" {
			continue
		}
		if _, err := os.Stat(st.File); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := m.lake.DropTable(ctx, id); err != nil {
			return fmt.Errorf("models: %w", err)
		}
		m.cfg.Logger.Info("marts: model dropped, its file is gone", "model", id, "file", st.File)
	}
	return nil
}
