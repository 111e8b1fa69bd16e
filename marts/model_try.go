package marts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"lakehouse/table"
)

// ModelTrial is what TryModel found: the model as compiled, the unit it
// built (the newest its inputs hold; "" for a model by table), the rows
// it gave there and its checks over them.
type ModelTrial struct {
	Ident  string
	Unit   string
	Reads  []string
	Built  string // the unit built: "day 2026-02-27 UTC", "hour 2026-02-27 09:00 UTC", or "all"
	Rows   int64
	Checks []Check
}

// Passed reports whether every check passed.
func (t ModelTrial) Passed() bool {
	for _, c := range t.Checks {
		if !c.Passed {
			return false
		}
	}
	return true
}

// DefaultTrialRows is how many rows TryModel prints.
const DefaultTrialRows = 20

// TryModel compiles the model in file against the lake's tables (with
// others, the models it may read, as they are in the lake), builds it on
// the newest unit its inputs hold, runs its checks there and writes its
// first rows (at most limit) to w in format. It writes nothing to the
// lake. A model that breaks a rule is a *ModelError (ErrBadModel).
func TryModel(ctx context.Context, lake *table.Lake, file string, others []Model, format string, limit int, w io.Writer, opt QueryOptions) (ModelTrial, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return ModelTrial{}, fmt.Errorf("model test: %w", err)
	}
	md, err := ParseModel(file, string(src))
	if err != nil {
		return ModelTrial{}, err
	}
	abs, _ := filepath.Abs(file)
	models := []Model{md}
	for _, o := range others {
		if oa, _ := filepath.Abs(o.File); o.Ident != md.Ident && oa != abs {
			models = append(models, o)
		}
	}
	if opt.MemoryLimit == "" {
		opt.MemoryLimit = DefaultQueryMemory
	}
	if opt.TempDir == "" {
		dir, err := os.MkdirTemp("", "lakehouse-model-")
		if err != nil {
			return ModelTrial{}, fmt.Errorf("model test: temporary directory: %w", err)
		}
		defer os.RemoveAll(dir)
		opt.TempDir = filepath.Join(dir, "duckdb")
	}
	m := newMarts(lake, nil, Config{Logger: slog.New(slog.DiscardHandler), Models: models,
		DuckMemoryLimit: opt.MemoryLimit, DuckTempDir: opt.TempDir})
	d, err := m.openDuck(ctx)
	if err != nil {
		return ModelTrial{}, err
	}
	defer d.Close()
	set, in, err := m.compileAndPlan(ctx, d, nil)
	if err != nil {
		return ModelTrial{}, err
	}
	var c *compiled
	for _, b := range set.built {
		if b.Ident == md.Ident {
			c = b
		}
	}
	if c == nil {
		for _, e := range set.refused {
			var me *ModelError
			if errors.As(e, &me) && me.File == md.File {
				return ModelTrial{}, e
			}
		}
		return ModelTrial{}, fmt.Errorf("model test: %s was not compiled: %w", md.Ident, errors.Join(set.refused...))
	}
	trial := ModelTrial{Ident: c.Ident, Unit: c.Unit.String(), Reads: c.inputs, Built: "all"}
	us := rebuild("a trial")
	if c.Unit.Kind != UnitTable {
		now, why := m.unitPrints(c, in)
		if now == nil {
			return trial, fmt.Errorf("model test: %s: %s", c.Ident, why)
		}
		if len(now) == 0 {
			return trial, fmt.Errorf("model test: %s: its inputs hold no rows yet", c.Ident)
		}
		newest := slices.Max(slices.Collect(func(yield func(int64) bool) {
			for u := range now {
				if !yield(u) {
					return
				}
			}
		}))
		us = units{list: []int64{newest}}
		layout := "2006-01-02"
		if c.Unit.Kind == UnitHour {
			layout = "2006-01-02 15:04"
		}
		trial.Built = c.Unit.Kind + " " + time.Unix(newest, 0).UTC().Format(layout) + " UTC"
	}
	if err := m.attachModelInputs(ctx, d, c, in, us); err != nil {
		return trial, err
	}
	if err := exec(ctx, d, "CREATE OR REPLACE TABLE main.model_raw AS "+c.SQL); err != nil {
		return trial, duckModelError(c.Model, RuleColumns, err)
	}
	if err := exec(ctx, d, "CREATE OR REPLACE TABLE main.model_new AS SELECT "+c.casts+" FROM main.model_raw"); err != nil {
		return trial, fmt.Errorf("model test: %w", err)
	}
	if !us.full {
		var out int64
		filter := unitFilter(quoteIdent(c.Unit.Col), us, c.Unit.length())
		if err := d.db.QueryRowContext(ctx, "SELECT count(*) FROM main.model_new WHERE NOT coalesce("+filter+", false)").Scan(&out); err != nil {
			return trial, fmt.Errorf("model test: %w", err)
		}
		if out > 0 {
			return trial, &ModelError{File: c.File, Line: c.unitLine, Rule: RuleRows, Msg: fmt.Sprintf(
				"%d rows fall outside the %s built: %s must be the %s of the input rows each was built from", out, c.Unit.Kind, c.Unit.Col, c.Unit.Kind)}
		}
	}
	if err := d.db.QueryRowContext(ctx, "SELECT count(*) FROM main.model_new").Scan(&trial.Rows); err != nil {
		return trial, fmt.Errorf("model test: %w", err)
	}
	if err := exec(ctx, d, "CREATE OR REPLACE VIEW model_prev.t AS SELECT * FROM main.model_new"); err != nil {
		return trial, fmt.Errorf("model test: %w", err)
	}
	if trial.Checks, err = m.modelChecks(ctx, d, c, in, us, true); err != nil {
		return trial, err
	}
	rows, err := d.db.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM main.model_new ORDER BY ALL LIMIT %d", quotedCols(c), max(limit, 0)))
	if err != nil {
		return trial, fmt.Errorf("model test: %w", err)
	}
	defer rows.Close()
	res, err := readResult(rows)
	if err != nil {
		return trial, fmt.Errorf("model test: %w", err)
	}
	if format == "" {
		format = FormatTable
	}
	return trial, res.write(w, format)
}
