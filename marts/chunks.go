package marts

import (
	"context"
	"fmt"
	"time"
)

// DefaultChunkRows bounds the silver rows one statement of a chunked build
// or check groups at once (Config.ChunkRows): about 250,000 edits (3 hours
// of the real stream) group inside DuckDB's 64MB memory limit, where a
// whole day (1.9 million) filled it (BenchmarkRefreshLateInTheDay).
const DefaultChunkRows = 250_000

// unitChunks lists consecutive ranges [from, to) of whole units whose
// rows count (a query of each unit's start and its count of rows, in
// order of the start) lists, each holding at most d.chunkRows rows unless
// one unit alone holds more. Units that count lists no row for are in no
// range.
func (d *duck) unitChunks(ctx context.Context, count string, unit time.Duration) ([][2]time.Time, error) {
	rows, err := d.db.QueryContext(ctx, count)
	if err != nil {
		return nil, fmt.Errorf("count rows per unit: %w", err)
	}
	defer rows.Close()
	var out [][2]time.Time
	var n int64
	for rows.Next() {
		var u time.Time
		var c int64
		if err := rows.Scan(&u, &c); err != nil {
			return nil, fmt.Errorf("count rows per unit: %w", err)
		}
		if len(out) > 0 && n+c <= d.chunkRows && out[len(out)-1][1].Equal(u) {
			out[len(out)-1][1] = u.Add(unit)
			n += c
			continue
		}
		out = append(out, [2]time.Time{u, u.Add(unit)})
		n = c
	}
	return out, rows.Err()
}

// buildChunked creates table tmp from q, whose rows are each a function of
// one unit of its inputs, by running q once per chunk of units in turn,
// after point has made its inputs views of the chunk's rows only (and
// first with none, for the table's columns). A grouping of a day of the
// real stream per (wiki, hour, editor) at once filled DuckDB's memory
// limit; a few hours at a time it does not.
func (d *duck) buildChunked(ctx context.Context, tmp, q string, chunks [][2]time.Time, point func(from, to time.Time) error) error {
	if err := point(time.Time{}, time.Time{}); err != nil {
		return err
	}
	if _, err := d.db.ExecContext(ctx, "CREATE OR REPLACE TABLE "+tmp+" AS "+q); err != nil {
		return err
	}
	for _, c := range chunks {
		if err := point(c[0], c[1]); err != nil {
			return err
		}
		if _, err := d.db.ExecContext(ctx, "INSERT INTO "+tmp+" "+q); err != nil {
			return fmt.Errorf("units from %s: %w", c[0].UTC().Format(time.RFC3339), err)
		}
	}
	return nil
}

// unitsIn lists the units of length unit from from to to.
func unitsIn(from, to time.Time, unit time.Duration) units {
	var us units
	for u := from; u.Before(to); u = u.Add(unit) {
		us.list = append(us.list, u.Unix())
	}
	if us.list == nil {
		us.list = []int64{}
	}
	return us
}
