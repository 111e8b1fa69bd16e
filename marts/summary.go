package marts

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
)

// Summary writes a short human summary of the gold marts, as last written
// to the lake, to w: totals, busiest wikis, the newest day's top editors,
// the hot pages of the last hour and the newest day's sessions. Before the
// first Refresh it says so instead.
func (m *Marts) Summary(ctx context.Context, w io.Writer) error {
	return summary(ctx, m.lake, w)
}

func summary(ctx context.Context, lake lakeAPI, w io.Writer) error {
	d, err := openLakeDuck(ctx, lake, duckLimits{})
	if err != nil {
		return err
	}
	defer d.Close()
	for _, id := range GoldTables {
		if _, err := d.attachFromLake(ctx, lake, id); err != nil {
			if isNoTable(err) {
				_, err := fmt.Fprintln(w, "gold marts: none yet (no refresh has run)")
				return err
			}
			return fmt.Errorf("summary: %w", err)
		}
	}
	h, err := highlights(ctx, d)
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	_, err = io.WriteString(w, h.String())
	return err
}

// Highlights is what the gold marts say at a glance: a headline and a few
// top rows of each mart.
type Highlights struct {
	Headline string          `json:"headline"`
	Lists    []HighlightList `json:"lists,omitempty"`
}

// HighlightList is a few top rows of one mart.
type HighlightList struct {
	Title string   `json:"title"`
	Items []string `json:"items"`
}

// String renders h as the demo prints it.
func (h Highlights) String() string {
	var b strings.Builder
	b.WriteString(h.Headline + "\n")
	for _, l := range h.Lists {
		fmt.Fprintf(&b, "  %s: %s\n", l.Title, strings.Join(l.Items, ", "))
	}
	return b.String()
}

// highlights reads the headline and top rows from the gold marts attached
// to d.
func highlights(ctx context.Context, d *duck) (Highlights, error) {
	var h Highlights
	var edits, bots, newPages, hours, wikis int64
	var first, last sql.NullTime
	err := d.db.QueryRowContext(ctx, `SELECT coalesce(sum(edits),0), coalesce(sum(bot_edits),0), coalesce(sum(new_pages),0),
		count(DISTINCT hour), count(DISTINCT wiki), min(hour), max(hour) FROM gold.wiki_activity_hourly`).
		Scan(&edits, &bots, &newPages, &hours, &wikis, &first, &last)
	if err != nil {
		return h, err
	}
	if edits == 0 {
		h.Headline = "gold marts: built, but silver holds no edits yet"
		return h, nil
	}
	unit := "hours"
	if hours == 1 {
		unit = "hour"
	}
	h.Headline = fmt.Sprintf("gold marts: %d edits (%d new pages, %.0f%% by bots) on %d wikis, %d %s from %s to %s UTC",
		edits, newPages, 100*float64(bots)/float64(edits), wikis, hours, unit,
		first.Time.UTC().Format("2006-01-02 15:04"), last.Time.UTC().Add(59*60e9).Format("2006-01-02 15:04"))

	for _, l := range highlightLists {
		items, err := queryItems(ctx, d, l.query, l.scan)
		if err != nil {
			return h, err
		}
		if len(items) > 0 {
			h.Lists = append(h.Lists, HighlightList{Title: l.title, Items: items})
		}
	}
	return h, nil
}

// highlightLists are the short lists under the headline: a query of the
// gold marts and how one row reads.
var highlightLists = []struct {
	title, query string
	scan         func(*sql.Rows) (string, error)
}{
	{"busiest wikis", `SELECT wiki, sum(edits) AS n FROM gold.wiki_activity_hourly GROUP BY wiki ORDER BY n DESC, wiki LIMIT 5`,
		func(r *sql.Rows) (string, error) {
			var wiki string
			var n int64
			err := r.Scan(&wiki, &n)
			return fmt.Sprintf("%s %d", wiki, n), err
		}},
	{"top editors of the newest day", `SELECT wiki, "user", bot, edits FROM gold.top_editors_daily
			WHERE day = (SELECT max(day) FROM gold.top_editors_daily) ORDER BY edits DESC, bytes_changed DESC, wiki, "user" LIMIT 5`,
		func(r *sql.Rows) (string, error) {
			var wiki, user string
			var bot bool
			var n int64
			err := r.Scan(&wiki, &user, &bot, &n)
			if bot {
				user += " (bot)"
			}
			return fmt.Sprintf("%s on %s %d", user, wiki, n), err
		}},
	{"hot pages, last hour", `SELECT wiki, title, edits, editors FROM gold.hot_pages WHERE time_window = 'last_hour' ORDER BY rank LIMIT 5`,
		func(r *sql.Rows) (string, error) {
			var wiki, title string
			var n, e int64
			err := r.Scan(&wiki, &title, &n, &e)
			return fmt.Sprintf("%s:%s %d edits/%d editors", wiki, title, n, e), err
		}},
	{"sessions of the newest day", `SELECT day, sessions, median_session_s, p95_session_s, edits_per_session, bot_sessions
			FROM gold.editor_sessions_daily ORDER BY day DESC LIMIT 1`,
		func(r *sql.Rows) (string, error) {
			var day sql.NullTime
			var n, botN int64
			var med, p95, per float64
			err := r.Scan(&day, &n, &med, &p95, &per, &botN)
			return fmt.Sprintf("%s %d sessions (%d bot), median %.0fs, p95 %.0fs, %.1f edits/session",
				day.Time.UTC().Format("2006-01-02"), n, botN, med, p95, per), err
		}},
}

// queryItems runs q and renders each row with scan.
func queryItems(ctx context.Context, d *duck, q string, scan func(*sql.Rows) (string, error)) ([]string, error) {
	rows, err := d.db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var items []string
	for rows.Next() {
		s, err := scan(rows)
		if err != nil {
			return nil, err
		}
		items = append(items, s)
	}
	return items, rows.Err()
}
