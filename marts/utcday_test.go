package marts

import (
	"context"
	"testing"
	"time"
)

// TestUTCDayAndUnitFilter: utc_day and unitFilter's ranges, which the
// marts use instead of DuckDB's time zone aware casts, agree with those
// casts (TimeZone UTC) on every timestamp of a sweep from 1966 to 2033
// (before 1970 too, and on the microsecond each side of a day's and an
// hour's bounds), on NULL, and on DATE columns.
func TestUTCDayAndUnitFilter(t *testing.T) {
	ctx := context.Background()
	d, err := openDuck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.db.ExecContext(ctx, `CREATE TABLE ts AS
		SELECT make_timestamp(x)::TIMESTAMPTZ AS t FROM range(-100000000000000, 2000000000000000, 7777777777) r(x)
		UNION ALL SELECT make_timestamp(x + k)::TIMESTAMPTZ FROM range(-864000000000, 864000000000, 3600000000) r(x), (VALUES (-1), (0), (1)) k(k)
		UNION ALL SELECT NULL`); err != nil {
		t.Fatal(err)
	}
	var n, rows int64
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE utc_day(t) IS DISTINCT FROM CAST(t AS DATE)), count(*) FROM ts`).Scan(&n, &rows); err != nil {
		t.Fatal(err)
	}
	if n != 0 || rows < 250_000 {
		t.Fatalf("utc_day differs from CAST(t AS DATE) on %d of %d timestamps", n, rows)
	}

	day := func(s string) int64 { v, _ := time.Parse(time.DateOnly, s); return v.Unix() }
	hour := func(s string) int64 { v, _ := time.Parse("2006-01-02 15", s); return v.Unix() }
	for _, c := range []struct {
		name, expr, want string
		units            []int64
		unit             time.Duration
	}{
		{"days", "t", "CAST(t AS DATE) IN (DATE '1969-12-31', DATE '1970-01-01', DATE '1970-01-03', DATE '2026-12-03')",
			[]int64{day("2026-12-03"), day("1970-01-03"), day("1969-12-31"), day("1970-01-01")}, unitDay},
		{"hours", "t", "date_trunc('hour', t) IN (TIMESTAMPTZ '1969-12-31 23:00:00+00', TIMESTAMPTZ '1970-01-01 00:00:00+00', TIMESTAMPTZ '1970-01-01 05:00:00+00')",
			[]int64{hour("1970-01-01 05"), hour("1969-12-31 23"), hour("1970-01-01 00")}, unitHour},
		{"days of a DATE column", "CAST(t AS DATE)", "CAST(t AS DATE) IN (DATE '1970-01-02', DATE '1970-01-03')",
			[]int64{day("1970-01-02"), day("1970-01-03")}, unitDay},
		{"none", "t", "false", nil, unitDay},
	} {
		got := unitFilter(c.expr, units{list: c.units}, c.unit)
		var diff, in int64
		if err := d.db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE (`+got+`) IS DISTINCT FROM (`+c.want+`)),
			count(*) FILTER (WHERE `+c.want+`) FROM ts`).Scan(&diff, &in); err != nil {
			t.Fatalf("%s: %s: %v", c.name, got, err)
		}
		if diff != 0 || (in == 0 && c.units != nil) {
			t.Fatalf("%s: %s differs from %s on %d timestamps (%d in)", c.name, got, c.want, diff, in)
		}
	}
	if got := unitFilter("t", rebuild("a test"), unitDay); got != "true" {
		t.Fatalf("full scope: %s", got)
	}
}
