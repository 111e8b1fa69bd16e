package marts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"lakehouse/broker"
	"lakehouse/table"
)

// Names of the asset checks.
const (
	CheckSilverUnique   = "silver_unique_event_ids"
	CheckBronzeOffsets  = "bronze_offsets_match_broker"
	CheckGoldReconciles = "gold_reconciles_silver"
	CheckSilverFresh    = "silver_fresh"
)

// Check is the result of one asset check with the numbers behind it.
// Observed and Expected are the headline numbers (for example duplicate
// rows found, 0 expected); Numbers holds every figure the check computed.
type Check struct {
	Name      string
	Asset     string
	Passed    bool
	Observed  int64
	Expected  int64
	Numbers   map[string]int64
	Message   string
	CheckedAt time.Time
}

func (c Check) String() string {
	status := "PASS"
	if !c.Passed {
		status = "FAIL"
	}
	return fmt.Sprintf("%s %s (%s): observed %d, expected %d: %s", status, c.Name, c.Asset, c.Observed, c.Expected, c.Message)
}

// runChecks runs the five checks on a session where bronze, silver, gold
// and ops.stream_progress are attached. A check that cannot run is reported as failed with the
// reason; only a canceled context stops the others.
func (m *Marts) runChecks(ctx context.Context, d *duck) ([]Check, error) {
	fns := []func(context.Context, *duck) (Check, error){
		m.checkSilverUnique, m.checkBronzeOffsets, m.checkGoldReconciles, m.checkSilverFresh, m.checkStreamsProgress,
	}
	names := []string{CheckSilverUnique, CheckBronzeOffsets, CheckGoldReconciles, CheckSilverFresh, CheckStreamsProgress}
	assets := []string{table.SilverEdits, table.Bronze, "gold.*", table.SilverEdits, table.StreamProgress}
	out := make([]Check, 0, len(fns))
	for i, fn := range fns {
		c, err := fn(ctx, d)
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			c = Check{Name: names[i], Asset: assets[i], Expected: 0, Observed: -1, Message: "check could not run: " + err.Error()}
		}
		c.CheckedAt = time.Now().UTC()
		out = append(out, c)
	}
	return out, nil
}

// checkBronzeOffsets: per partition, bronze holds each broker offset at most
// once, with no hole between the broker's first readable offset and the
// newest offset bronze holds, and nothing beyond the broker's end. Offsets
// the bronze stream has not reached yet are lag, reported but not a failure.
func (m *Marts) checkBronzeOffsets(ctx context.Context, d *duck) (Check, error) {
	c := Check{Name: CheckBronzeOffsets, Asset: table.Bronze, Expected: 0, Numbers: map[string]int64{}}
	prev := m.bronzeSeen
	m.bronzeSeen = nil // until this check passes
	if m.log == nil {
		return Check{}, errors.New("no broker log configured")
	}
	parts, err := m.log.Offsets(ctx, m.cfg.Topic)
	if err != nil {
		return Check{}, fmt.Errorf("broker offsets of %s: %w", m.cfg.Topic, err)
	}
	inBroker := map[int]broker.PartitionOffsets{}
	for _, p := range parts {
		inBroker[p.Partition] = p
	}
	heldIn := m.heldIn(inBroker)
	bronze, how, err := bronzeOffsetStats(ctx, d, prev, func() error { return m.attachAllBronze(ctx, d) }, heldIn)
	if err != nil {
		return Check{}, err
	}
	// Counts are of records the broker holds: on a sparse log (Kafka) an
	// offset may hold none, and End-Start only bounds them.
	var dups, gaps, beyond, unknown, lag, total, brokerMsgs int64
	var problems []string
	for _, p := range parts {
		s, ok := bronze[p.Partition]
		if !ok {
			n, err := heldIn(ctx, p.Partition, p.Start, p.End)
			if err != nil {
				return Check{}, err
			}
			lag += n
			brokerMsgs += n
			continue
		}
		total += s.rows
		if n := s.rows - s.distinct; n > 0 {
			dups += n
			problems = append(problems, fmt.Sprintf("p%d: %d duplicate offsets", p.Partition, n))
		}
		hole := s.held - s.distinct
		skipped, err := heldIn(ctx, p.Partition, p.Start, s.min) // records the broker still has but bronze skipped
		if err != nil {
			return Check{}, err
		}
		hole += skipped
		if hole > 0 {
			gaps += hole
			problems = append(problems, fmt.Sprintf("p%d: %d missing offsets", p.Partition, hole))
		}
		if s.max >= p.End {
			beyond += s.max - p.End + 1
			problems = append(problems, fmt.Sprintf("p%d: offsets up to %d beyond broker end %d", p.Partition, s.max, p.End))
		}
		behind, err := heldIn(ctx, p.Partition, s.max+1, p.End)
		if err != nil {
			return Check{}, err
		}
		lag += behind
		if broker.IsSparse(m.log) {
			brokerMsgs += skipped + s.held + behind
		} else {
			brokerMsgs += p.End - p.Start
		}
	}
	var ps []int
	for p := range bronze {
		if _, ok := inBroker[p]; !ok {
			ps = append(ps, p)
		}
	}
	sort.Ints(ps)
	for _, p := range ps {
		unknown += bronze[p].rows
		total += bronze[p].rows
		problems = append(problems, fmt.Sprintf("p%d: partition unknown to the broker", p))
	}
	c.Numbers = map[string]int64{"bronze_rows": total, "broker_messages": brokerMsgs, "partitions": int64(len(parts)),
		"duplicate_offsets": dups, "missing_offsets": gaps, "offsets_beyond_end": beyond,
		"rows_in_unknown_partitions": unknown, "lag": lag}
	c.Observed = dups + gaps + beyond + unknown
	c.Passed = c.Observed == 0
	if c.Passed {
		c.Message = fmt.Sprintf("%d bronze rows over %d partitions, dense and unique (%s); %d offsets not yet in bronze", total, len(parts), how, lag)
		m.bronzeSeen = &bronzeSeen{table: m.bronzeTable, stats: bronze, rows: d.rows[table.Bronze]}
	} else {
		c.Message = strings.Join(problems, "; ")
	}
	return c, nil
}

// reconciliation is one comparison of a gold figure with silver.
type reconciliation struct {
	name  string // numbers key prefix
	gold  string // SQL returning one BIGINT
	other string // SQL returning the BIGINT it must equal
}

var reconciliations = []reconciliation{
	// wiki_activity_hourly is rebuilt by the hour: silver.edits_hours is
	// silver in the hours rebuilt, as its gold view is.
	{"hourly_edits", `SELECT coalesce(sum(edits), 0) FROM gold.wiki_activity_hourly`,
		`SELECT count(*) FROM silver.edits_hours`},
	{"hourly_bot_plus_human", `SELECT coalesce(sum(bot_edits + human_edits), 0) FROM gold.wiki_activity_hourly`,
		`SELECT count(*) FROM silver.edits_hours`},
	{"hourly_new_pages", `SELECT coalesce(sum(new_pages), 0) FROM gold.wiki_activity_hourly`,
		`SELECT count(*) FROM silver.edits_hours WHERE type = 'new'`},
	{"hourly_bytes_net", `SELECT coalesce(sum(bytes_added - bytes_removed), 0) FROM gold.wiki_activity_hourly`,
		`SELECT coalesce(sum(byte_delta), 0) FROM silver.edits_hours`},
	{"sessions_daily_sessions", `SELECT coalesce(sum(sessions), 0) FROM gold.editor_sessions_daily`,
		`SELECT count(*) FROM silver.editor_sessions`},
	{"sessions_daily_edits", `SELECT coalesce(sum(edits), 0) FROM gold.editor_sessions_daily`,
		`SELECT coalesce(sum(edits), 0) FROM silver.editor_sessions`},
	// Every (day, wiki) of silver has a top editor, and rank 1's edits are
	// the most any editor made that day on that wiki.
	{"top_editors_groups", `SELECT count(*) FROM gold.top_editors_daily WHERE rank = 1`,
		`SELECT count(*) FROM (SELECT DISTINCT utc_day(event_time), wiki FROM silver.edits)`},
	{"top_editors_rank1_edits", `SELECT coalesce(sum(edits), 0) FROM gold.top_editors_daily WHERE rank = 1`,
		`SELECT coalesce(sum(m), 0) FROM (SELECT max(n) AS m FROM (
			SELECT utc_day(event_time) AS day, wiki, "user", count(*) AS n
			FROM silver.edits GROUP BY ALL) GROUP BY day, wiki)`},
	// Each hot page's edits equal silver's count for that page in its window.
	{"hot_pages_edits", `SELECT coalesce(sum(edits), 0) FROM gold.hot_pages`,
		`SELECT coalesce(sum((SELECT count(*) FROM silver.edits_recent e WHERE e.wiki = h.wiki AND e.title = h.title
			AND e.event_time > h.window_start AND e.event_time <= h.as_of)), 0) FROM gold.hot_pages h`},
}

// checkGoldReconciles: the gold marts, as read back from the lake, agree
// with the silver snapshot they were built from.
func (m *Marts) checkGoldReconciles(ctx context.Context, d *duck) (Check, error) {
	c := Check{Name: CheckGoldReconciles, Asset: "gold.*", Expected: 0, Numbers: map[string]int64{}}
	var bad []string
	for _, r := range reconciliations {
		var g, s int64
		if err := d.db.QueryRowContext(ctx, "SELECT ("+r.gold+")::BIGINT, ("+r.other+")::BIGINT").Scan(&g, &s); err != nil {
			return Check{}, fmt.Errorf("reconcile %s: %w", r.name, err)
		}
		c.Numbers[r.name+"_gold"] = g
		c.Numbers[r.name+"_silver"] = s
		if g != s {
			c.Observed++
			bad = append(bad, fmt.Sprintf("%s: gold %d, silver %d", r.name, g, s))
		}
	}
	c.Passed = c.Observed == 0
	if c.Passed {
		c.Message = fmt.Sprintf("%d reconciliations agree (silver: %d edits in the hours rebuilt, %d sessions in the days rebuilt)", len(reconciliations),
			c.Numbers["hourly_edits_silver"], c.Numbers["sessions_daily_sessions_silver"])
	} else {
		c.Message = strings.Join(bad, "; ")
	}
	return c, nil
}

// freshWindow bounds the bronze rows checkSilverFresh parses: those the
// broker received within this long of bronze's newest. An edit's event time
// precedes its broker time, so the newest edit is among the recent rows
// whenever edits flow (on the real stream, several a second). Parsing every
// raw event of bronze at every refresh cost more each day, and even an hour
// of it was the refresh's peak memory: at 600 ev/s DuckDB held hundreds of
// MB of bronze's values for a moment, the process's peak; the last 2 minutes are
// in the newest, small files, and row groups before them are skipped by
// their broker_ts statistics.
const freshWindow = 2 * time.Minute

// defaultFreshRows bounds the same rows by count: only the newest
// defaultFreshRows offsets of each partition are parsed. Appends come
// much denser than the stream when ingest catches up after a stop (or the
// demo builds a lake): a month of history appended within minutes put
// half of bronze in the window, and the first check after a restart
// parsed millions of raw events. The check looks for the newest edit,
// and a partition's newest appends hold it whenever edits flow: at the
// stream's rate the whole window is about 1,000 events a partition, at
// 600 events a second about 18,000, whose newest 10,000 still hold it.
const defaultFreshRows = 10_000

// checkSilverFresh: the newest committed silver event time is within
// MaxSilverLag of the newest edit or new-page event time among the bronze
// rows received in the last freshWindow (of bronze's newest broker time),
// at most the newest freshRows offsets of each partition.
func (m *Marts) checkSilverFresh(ctx context.Context, d *duck) (Check, error) {
	c := Check{Name: CheckSilverFresh, Asset: table.SilverEdits, Expected: int64(m.cfg.MaxSilverLag / time.Second)}
	var bronzeMax, silverMax, newestBroker sql.NullTime
	var bronzeEdits, silverRows int64
	var lowestMax sql.NullInt64 // the smallest of the partitions' newest offsets
	if m.bronzeFloor.ok {
		// From bronze's marker: the newest broker time is then that of a
		// partition's newest row, above the floor, and only the row groups
		// there are read. Scanning every row for the two maxima cost more
		// with every day of history (a cold restart read all of bronze's
		// broker_ts and offsets).
		lowestMax = sql.NullInt64{Int64: m.bronzeFloor.offset, Valid: true}
		if err := d.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT max(broker_ts) FROM bronze.recentchange WHERE broker_offset > %d`,
			m.bronzeFloor.offset-m.cfg.freshRows)).Scan(&newestBroker); err != nil {
			return Check{}, fmt.Errorf("newest bronze row: %w", err)
		}
	} else if err := d.db.QueryRowContext(ctx, `SELECT (SELECT max(broker_ts) FROM bronze.recentchange),
		(SELECT min(mx) FROM (SELECT max(broker_offset) AS mx FROM bronze.recentchange GROUP BY broker_partition))`).Scan(&newestBroker, &lowestMax); err != nil {
		return Check{}, fmt.Errorf("newest bronze row: %w", err)
	}
	from := time.Unix(0, 0)
	if newestBroker.Valid {
		from = newestBroker.Time.Add(-freshWindow)
	}
	// Every partition keeps at least its newest freshRows offsets.
	fromOffset := int64(-1)
	if lowestMax.Valid {
		fromOffset = lowestMax.Int64 - m.cfg.freshRows
	}
	// The cutoff is a literal so the Parquet scan can skip older row groups.
	// One streaming aggregate: each value is parsed once (one
	// json_extract_string with every path) and nothing is materialized. A
	// CTE of value::JSON read twice was materialized whole: the last hour of
	// bronze's JSON (150 MB at 35 ev/s, GBs at 600) in memory at every
	// refresh.
	err := d.db.QueryRowContext(ctx, fmt.Sprintf(`
		SELECT max(to_timestamp(try_cast(f[2] AS BIGINT))) FILTER (WHERE f[1] IN ('edit', 'new') AND coalesce(f[3], '') <> 'canary'),
		       count(*) FILTER (WHERE f[1] IN ('edit', 'new') AND coalesce(f[3], '') <> 'canary')
		FROM (SELECT CASE WHEN json_valid(value) THEN json_extract_string(value, ['$.type', '$.timestamp', '$.meta.domain']) END AS f
		      FROM bronze.recentchange WHERE broker_ts >= TIMESTAMPTZ '%s' AND broker_offset > %d)`,
		from.UTC().Format("2006-01-02 15:04:05.999999+00"), fromOffset)).Scan(&bronzeMax, &bronzeEdits)
	if err != nil {
		return Check{}, fmt.Errorf("newest bronze event time: %w", err)
	}
	if err := d.db.QueryRowContext(ctx, `SELECT max(event_time), count(*) FROM silver.edits_recent`).Scan(&silverMax, &silverRows); err != nil {
		return Check{}, fmt.Errorf("newest silver event time: %w", err)
	}
	c.Numbers = map[string]int64{"bronze_recent_edit_events": bronzeEdits, "silver_recent_rows": silverRows,
		"max_lag_s": c.Expected, "window_s": int64(freshWindow / time.Second), "window_rows": m.cfg.freshRows}
	if bronzeMax.Valid {
		c.Numbers["bronze_newest_unix"] = bronzeMax.Time.Unix()
	}
	if silverMax.Valid {
		c.Numbers["silver_newest_unix"] = silverMax.Time.Unix()
	}
	switch {
	case !bronzeMax.Valid:
		c.Passed = true
		c.Message = fmt.Sprintf("no edit events among bronze's rows of the last %s", freshWindow)
	case !silverMax.Valid:
		c.Observed = -1
		c.Message = fmt.Sprintf("silver is empty while bronze received %d edit events in the last %s, up to %s", bronzeEdits, freshWindow, bronzeMax.Time.UTC().Format(time.RFC3339))
	default:
		lag := bronzeMax.Time.Sub(silverMax.Time)
		c.Observed = int64(lag / time.Second)
		c.Numbers["lag_s"] = c.Observed
		c.Passed = lag <= m.cfg.MaxSilverLag
		c.Message = fmt.Sprintf("newest silver event %s, newest bronze event %s: lag %s (limit %s)",
			silverMax.Time.UTC().Format(time.RFC3339), bronzeMax.Time.UTC().Format(time.RFC3339), lag, m.cfg.MaxSilverLag)
	}
	return c, nil
}
