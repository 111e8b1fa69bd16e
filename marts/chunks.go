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

// hourChunks lists consecutive ranges [from, to) of whole UTC hours of
// silver.edits_hours (the hours a refresh rebuilds), each holding at most
// d.chunkRows edits unless one hour alone holds more.
func (d *duck) hourChunks(ctx context.Context) ([][2]time.Time, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT date_trunc('hour', event_time) AS h, count(*) FROM silver.edits_hours GROUP BY h ORDER BY h`)
	if err != nil {
		return nil, fmt.Errorf("count edits per hour: %w", err)
	}
	defer rows.Close()
	var out [][2]time.Time
	var n int64
	for rows.Next() {
		var h time.Time
		var c int64
		if err := rows.Scan(&h, &c); err != nil {
			return nil, fmt.Errorf("count edits per hour: %w", err)
		}
		if len(out) > 0 && n+c <= d.chunkRows && out[len(out)-1][1].Equal(h) {
			out[len(out)-1][1] = h.Add(time.Hour)
			n += c
			continue
		}
		out = append(out, [2]time.Time{h, h.Add(time.Hour)})
		n = c
	}
	return out, rows.Err()
}

// buildByHour creates table tmp from q, a mart whose rows are each a
// function of one hour of silver.edits_hours and which reads only the hours
// from getvariable('hours_from') to getvariable('hours_to'), by running q
// over each chunk of hours (hourChunks) in turn.
func (d *duck) buildByHour(ctx context.Context, tmp, q string) error {
	chunks, err := d.hourChunks(ctx)
	if err != nil {
		return err
	}
	if err := d.setHours(ctx, time.Time{}, time.Time{}); err != nil { // no hour: the table's columns only
		return err
	}
	if _, err := d.db.ExecContext(ctx, "CREATE OR REPLACE TABLE "+tmp+" AS "+q); err != nil {
		return err
	}
	for _, c := range chunks {
		if err := d.setHours(ctx, c[0], c[1]); err != nil {
			return err
		}
		if _, err := d.db.ExecContext(ctx, "INSERT INTO "+tmp+" "+q); err != nil {
			return fmt.Errorf("hours from %s: %w", c[0].UTC().Format(time.RFC3339), err)
		}
	}
	return nil
}

// setHours sets the hours a chunked mart's statement reads.
func (d *duck) setHours(ctx context.Context, from, to time.Time) error {
	const ts = "2006-01-02 15:04:05.999999-07"
	for name, at := range map[string]time.Time{"hours_from": from, "hours_to": to} {
		if _, err := d.db.ExecContext(ctx, fmt.Sprintf("SET VARIABLE %s = TIMESTAMPTZ '%s'", name, at.UTC().Format(ts))); err != nil {
			return fmt.Errorf("set the hours of a chunk: %w", err)
		}
	}
	return nil
}
