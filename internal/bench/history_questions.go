package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Answer is one question asked through `query`, checked against the truth.
type Answer struct {
	Question string   `json:"question"`
	SQL      string   `json:"sql"`
	Got      []string `json:"got"`  // the rows `query` answered, "column=value, ..."
	Want     []string `json:"want"` // the rows the truth says
	Exact    bool     `json:"exact"`
	Query    ChildRun `json:"query"`
	Err      string   `json:"error,omitempty"`
}

// question is a typical question and its true answer.
type question struct {
	name string
	sql  string
	cols []string
	want [][]any
}

// questions are the questions asked of a lake whose truth is t.
func questions(t truth) []question {
	qs := []question{
		{name: "rows and distinct broker offsets of bronze.recentchange",
			sql:  "SELECT count(*) AS rows, count(DISTINCT (broker_partition, broker_offset)) AS offsets FROM bronze.recentchange",
			cols: []string{"rows", "offsets"}, want: [][]any{{t.bronzeRows, t.bronzeDistinct}}},
		{name: "rows of silver.edits",
			sql:  "SELECT count(*) AS rows FROM silver.edits",
			cols: []string{"rows"}, want: [][]any{{t.silverRows}}},
	}
	if !t.newest.IsZero() {
		q := question{name: fmt.Sprintf("top %d wikis of the last day (edits after %s, the newest event time minus 24 h)", topN, t.cutoff.Format(time.RFC3339Nano)),
			sql: fmt.Sprintf("SELECT wiki, count(*) AS edits FROM silver.edits WHERE event_time > TIMESTAMPTZ '%s' GROUP BY wiki ORDER BY edits DESC, wiki LIMIT %d",
				t.cutoff.Format("2006-01-02 15:04:05.000000-07:00"), topN),
			cols: []string{"wiki", "edits"}}
		for _, w := range t.topWikis {
			q.want = append(q.want, []any{w.wiki, w.edits})
		}
		qs = append(qs, q)
	}
	if e := t.editor; e != nil {
		qs = append(qs, question{name: fmt.Sprintf("sessions of one editor (%s on %s, the editor with the most sessions)", e.user, e.wiki),
			sql: fmt.Sprintf(`SELECT count(*) AS sessions, sum(edits)::BIGINT AS edits FROM silver.editor_sessions WHERE wiki = %s AND "user" = %s`,
				sqlString(e.wiki), sqlString(e.user)),
			cols: []string{"sessions", "edits"}, want: [][]any{{e.sessions, e.edits}}})
	}
	return qs
}

// sqlString quotes s as a SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// askQuestions reads the truth of lake, asks each question through `query`
// (a child process, as a user would) and compares. A lake whose bronze
// disagrees with the broker is an error (the truth itself is then in
// doubt); the questions are still asked.
func askQuestions(ctx context.Context, cfg HistoryConfig, lake, logPath string, say func(string, ...any)) ([]Answer, error) {
	start := time.Now()
	t, err := readTruth(ctx, lake)
	if err != nil {
		return nil, fmt.Errorf("read the truth: %w", err)
	}
	say("truth read in %.1f s: bronze %d rows, %d distinct offsets (broker %d), silver %d rows",
		time.Since(start).Seconds(), t.bronzeRows, t.bronzeDistinct, t.brokerRecords, t.silverRows)
	var errs []error
	if t.bronzeDups != 0 || t.bronzeDistinct != t.brokerRecords {
		errs = append(errs, fmt.Errorf("the lake disagrees with the broker: bronze holds %d distinct offsets (%d repeated), the broker gave %d",
			t.bronzeDistinct, t.bronzeDups, t.brokerRecords))
	}
	if t.editor == nil {
		errs = append(errs, errors.New("silver.editor_sessions is empty: no editor's sessions to ask about"))
	}
	var out []Answer
	for _, q := range questions(t) {
		a := ask(ctx, cfg, lake, logPath, q)
		verdict := "exact"
		if !a.Exact {
			verdict = fmt.Sprintf("WRONG: got %s, want %s %s", strings.Join(a.Got, "; "), strings.Join(a.Want, "; "), a.Err)
		}
		say("query %q: %s (%.1f s, peak RSS %s)", q.name, verdict, a.Query.Seconds, fmtBytes(a.Query.PeakRSS))
		out = append(out, a)
	}
	return out, errors.Join(errs...)
}

// ask runs one question through `query --format json`.
func ask(ctx context.Context, cfg HistoryConfig, lake, logPath string, q question) Answer {
	a := Answer{Question: q.name, SQL: q.sql}
	for _, row := range q.want {
		a.Want = append(a.Want, renderRow(q.cols, row))
	}
	run, out := runChild(ctx, cfg.Launch, logPath, "query", "--data", lake, "--format", "json", q.sql)
	a.Query = run
	if run.ExitCode != 0 || run.Err != "" {
		a.Err = fmt.Sprintf("query exit %d %s: %s", run.ExitCode, run.Err, oneLine(run.Output, 3))
		return a
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var rows []map[string]any
	if err := dec.Decode(&rows); err != nil {
		a.Err = fmt.Sprintf("query's output is not a JSON array of rows: %v", err)
		return a
	}
	for _, r := range rows {
		vals := make([]any, len(q.cols))
		for i, c := range q.cols {
			v, ok := r[c]
			if !ok {
				a.Err = fmt.Sprintf("query's rows lack column %q", c)
				return a
			}
			vals[i] = v
		}
		a.Got = append(a.Got, renderRow(q.cols, vals))
	}
	a.Exact = slices.Equal(a.Got, a.Want)
	return a
}

// renderRow renders one row as "col=value, ...".
func renderRow(cols []string, vals []any) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("%s=%v", c, vals[i])
	}
	return strings.Join(parts, ", ")
}
