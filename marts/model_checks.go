package marts

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A model's checks run after it is written, on what was written: unique,
// not_null and accepted_values over the whole model (model_prev.t, the
// model as it now is), row_count_between per unit rebuilt (the whole
// table for a model by table), and reconciles per unit rebuilt: the
// model's aggregate over its rows of the unit against the other table's
// aggregate over its rows of the same unit. Each is a Check named
// "<model>: <check>", recorded in ops.asset_checks with the refresh's.

// modelChecks runs c's checks; rebuilt says whether main.model_new holds
// the units of us just built (else nothing was rebuilt).
func (m *Marts) modelChecks(ctx context.Context, d *duck, c *compiled, in map[string]planned, us units, rebuilt bool) ([]Check, error) {
	var out []Check
	for _, chk := range c.Checks {
		res := Check{Name: c.Ident + ": " + chk.String(), Asset: c.Ident, Expected: 0, Numbers: map[string]int64{}}
		if err := m.runModelCheck(ctx, d, c, chk, in, us, rebuilt, &res); err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			res.Observed, res.Passed, res.Message = -1, false, "check could not run: "+duckMessage(err)
		}
		res.CheckedAt = time.Now().UTC()
		out = append(out, res)
	}
	return out, nil
}

func (m *Marts) runModelCheck(ctx context.Context, d *duck, c *compiled, chk ModelCheck, in map[string]planned, us units, rebuilt bool, res *Check) error {
	const model = "model_prev.t"
	count := func(q string) (int64, error) {
		var n int64
		err := d.db.QueryRowContext(ctx, q).Scan(&n)
		return n, err
	}
	cols := make([]string, 0, len(chk.Args))
	for _, a := range chk.Args {
		cols = append(cols, quoteIdent(a))
	}
	var err error
	switch chk.Kind {
	case CheckUnique:
		res.Observed, err = count(fmt.Sprintf("SELECT coalesce(sum(n - 1), 0)::BIGINT FROM (SELECT count(*) AS n FROM %s GROUP BY %s HAVING count(*) > 1)", model, strings.Join(cols, ", ")))
		res.Message = fmt.Sprintf("%d rows repeat a value of (%s) another row has", res.Observed, strings.Join(chk.Args, ", "))
	case CheckNotNull:
		res.Observed, err = count(fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IS NULL", model, strings.Join(cols, " IS NULL OR ")))
		res.Message = fmt.Sprintf("%d rows have a NULL in %s", res.Observed, strings.Join(chk.Args, ", "))
	case CheckAcceptedValues:
		res.Observed, err = count(fmt.Sprintf("SELECT count(*) FROM %s WHERE %s NOT IN (%s)", model, cols[0], strings.Join(chk.Args[1:], ", ")))
		res.Message = fmt.Sprintf("%d rows have a value of %s not in (%s)", res.Observed, chk.Args[0], strings.Join(chk.Args[1:], ", "))
	case CheckRowCountBetween:
		lo, _ := strconv.ParseInt(chk.Args[0], 10, 64)
		hi, _ := strconv.ParseInt(chk.Args[1], 10, 64)
		res.Numbers["min"], res.Numbers["max"] = lo, hi
		if c.Unit.Kind == UnitTable {
			var n int64
			if n, err = count("SELECT count(*) FROM " + model); err == nil {
				res.Numbers["rows"] = n
				if n < lo || n > hi {
					res.Observed = 1
				}
				res.Message = fmt.Sprintf("%d rows, want %d to %d", n, lo, hi)
			}
			break
		}
		if !rebuilt {
			res.Message = "no unit rebuilt"
			break
		}
		var units int64
		q := fmt.Sprintf("SELECT count(*), count(*) FILTER (WHERE n < %d OR n > %d) FROM (SELECT count(*) AS n FROM main.model_new GROUP BY %s)", lo, hi, unitExpr(c.Unit.Col, c.Unit))
		if err = d.db.QueryRowContext(ctx, q).Scan(&units, &res.Observed); err == nil {
			res.Numbers["units"] = units
			res.Message = fmt.Sprintf("%d of the %d %ss rebuilt have fewer than %d or more than %d rows", res.Observed, units, c.Unit.Kind, lo, hi)
		}
	case CheckReconciles:
		if !rebuilt && c.Unit.Kind != UnitTable {
			res.Message = "no unit rebuilt"
			break
		}
		err = m.reconcile(ctx, d, c, chk, in, us, res)
	}
	if err != nil {
		return err
	}
	res.Passed = res.Observed == 0
	return nil
}

// reconcile compares, per unit rebuilt (the whole table for a model by
// table), the model's aggregate with the other table's.
func (m *Marts) reconcile(ctx context.Context, d *duck, c *compiled, chk ModelCheck, in map[string]planned, us units, res *Check) error {
	other := strings.ToLower(chk.Args[1])
	p, ok := in[other]
	if !ok {
		return fmt.Errorf("%s is not planned", other)
	}
	if err := attachSource(ctx, d, p, us, c.Unit); err != nil {
		return err
	}
	var q string
	if c.Unit.Kind == UnitTable {
		q = fmt.Sprintf("SELECT 1, CASE WHEN a IS NOT DISTINCT FROM b THEN 0 ELSE 1 END, coalesce(CAST(a AS DOUBLE), 0), coalesce(CAST(b AS DOUBLE), 0) FROM (SELECT (SELECT %s FROM model_prev.t) AS a, (SELECT %s FROM %s) AS b)",
			chk.Args[0], chk.Args[2], qualified(other))
	} else {
		q = fmt.Sprintf(`WITH a AS (SELECT %s AS u, %s AS v FROM main.model_new GROUP BY 1),
b AS (SELECT %s AS u, %s AS v FROM %s GROUP BY 1)
SELECT count(*), count(*) FILTER (WHERE coalesce(a.v, 0) <> coalesce(b.v, 0)),
       coalesce(sum(CAST(a.v AS DOUBLE)), 0), coalesce(sum(CAST(b.v AS DOUBLE)), 0)
FROM a FULL OUTER JOIN b ON a.u = b.u`,
			unitExpr(c.Unit.Col, c.Unit), chk.Args[0], unitExpr(p.src.timeCol, c.Unit), chk.Args[2], qualified(other))
	}
	var units int64
	var a, b float64
	if err := d.db.QueryRowContext(ctx, q).Scan(&units, &res.Observed, &a, &b); err != nil {
		return err
	}
	res.Numbers["units"] = units
	res.Numbers["model"], res.Numbers["other"] = int64(a), int64(b)
	what := fmt.Sprintf("%d of the %d %ss rebuilt", res.Observed, units, c.Unit.Kind)
	if c.Unit.Kind == UnitTable {
		what = "the table"
		if res.Observed == 0 {
			what = "none"
		}
	}
	res.Message = fmt.Sprintf("%s differ: %s over the model is %g, %s over %s %g", what, chk.Args[0], a, chk.Args[2], other, b)
	return nil
}

// unitExpr is the start of the unit (a TIMESTAMPTZ) of col's value.
func unitExpr(col string, u ModelUnit) string {
	return fmt.Sprintf("date_trunc('%s', CAST(%s AS TIMESTAMPTZ))", u.Kind, quoteIdent(col))
}
