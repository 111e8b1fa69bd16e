package marts

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"lakehouse/table"
)

// CheckStreamsProgress names the check that a layer has not stopped: see
// checkStreamsProgress.
const CheckStreamsProgress = "streams_progressing"

// Thresholds of checkStreamsProgress.
const (
	// progressWindow: the progress rows judged are those that started
	// within this of the newest one.
	progressWindow = time.Hour
	// dropFraction of a query's candidate rows dropped as late or
	// unparseable (out of at least dropMinRows) means it has stopped
	// accepting its input: a watermark moved by a bad clock, input it can
	// no longer read.
	dropFraction = 0.9
	dropMinRows  = 100
	// stallAfter: a query whose newest batch is this much older than the
	// newest batch of any query, with input waiting at its last batch, has
	// stopped.
	stallAfter = 15 * time.Minute
)

// queryProgress is one query's progress rows summed over the window.
type queryProgress struct {
	name                         string
	batches                      int64
	out, late, dups, unparseable int64
	newest                       time.Time
	lastLag                      int64
}

// checkStreamsProgress: no query of the stream has stopped in the last
// progressWindow of ops.stream_progress (the rows every batch writes). A
// query fails the check when it drops nearly all its candidate rows (rows
// out, duplicates, late and unparseable) as late or unparseable: 90 % of at
// least 100; or when its newest batch is more than stallAfter older than
// the newest batch of any query while its last batch left input waiting.
// The other checks stay green in both cases (silver_fresh compares silver
// with what bronze holds, and both can stop together); this one reads what
// the queries did.
func (m *Marts) checkStreamsProgress(ctx context.Context, d *duck) (Check, error) {
	c := Check{Name: CheckStreamsProgress, Asset: table.StreamProgress, Expected: 0, Numbers: map[string]int64{}}
	var newest sql.NullTime
	if err := d.db.QueryRowContext(ctx, `SELECT max(started) FROM ops.stream_progress`).Scan(&newest); err != nil {
		return Check{}, fmt.Errorf("newest progress row: %w", err)
	}
	if !newest.Valid {
		c.Passed = true
		c.Message = "no batch in ops.stream_progress yet (each query flushes its rows every 10 batches or 10 s, and when it stops)"
		return c, nil
	}
	from := newest.Time.Add(-progressWindow)
	// The cutoff is a literal so the Parquet scan can skip older row groups.
	rows, err := d.db.QueryContext(ctx, fmt.Sprintf(`
		SELECT query, count(*), sum(rows_out), sum(rows_dropped_by_watermark), sum(duplicates_dropped),
		       sum(unparseable), max(started), arg_max(lag, started)
		FROM ops.stream_progress WHERE started >= TIMESTAMPTZ '%s'
		GROUP BY query ORDER BY query`, from.UTC().Format("2006-01-02 15:04:05.999999+00")))
	if err != nil {
		return Check{}, fmt.Errorf("progress per query: %w", err)
	}
	defer rows.Close()
	var qs []queryProgress
	for rows.Next() {
		var q queryProgress
		if err := rows.Scan(&q.name, &q.batches, &q.out, &q.late, &q.dups, &q.unparseable, &q.newest, &q.lastLag); err != nil {
			return Check{}, fmt.Errorf("progress per query: %w", err)
		}
		qs = append(qs, q)
	}
	if err := rows.Err(); err != nil {
		return Check{}, fmt.Errorf("progress per query: %w", err)
	}
	var problems []string
	for _, q := range qs {
		problems = append(problems, q.problems(newest.Time)...)
		c.Numbers[q.name+"_batches"] = q.batches
		c.Numbers[q.name+"_rows_out"] = q.out
		c.Numbers[q.name+"_dropped"] = q.late + q.unparseable
		c.Numbers[q.name+"_behind_newest_s"] = int64(newest.Time.Sub(q.newest) / time.Second)
	}
	sort.Strings(problems)
	c.Observed = int64(len(problems))
	c.Numbers["stopped_queries"] = c.Observed
	c.Passed = len(problems) == 0
	if c.Passed {
		c.Message = fmt.Sprintf("%d queries progressing over the last %s of batches", len(qs), progressWindow)
	} else {
		c.Message = strings.Join(problems, "; ")
	}
	return c, nil
}

// problems says how q has stopped, if it has, given the newest batch of any
// query.
func (q queryProgress) problems(newest time.Time) []string {
	var out []string
	candidates := q.out + q.dups + q.late + q.unparseable
	dropped := q.late + q.unparseable
	if candidates >= dropMinRows && float64(dropped) >= dropFraction*float64(candidates) {
		out = append(out, fmt.Sprintf("%s dropped %d of %d rows (%d late, %d unparseable) in its last %s of batches",
			q.name, dropped, candidates, q.late, q.unparseable, progressWindow))
	}
	if behind := newest.Sub(q.newest); behind > stallAfter && q.lastLag > 0 {
		out = append(out, fmt.Sprintf("%s has run no batch for %s while others did, with %d waiting at its last one",
			q.name, behind.Round(time.Second), q.lastLag))
	}
	return out
}
