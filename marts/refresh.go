package marts

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"lakehouse/internal/fault"
	"lakehouse/table"
)

// Fault hooks (see internal/fault).
var (
	hookAfterGoldWrite = fault.Register("marts.after-gold-write",
		"one gold mart or model overwritten, before the next one and the checks")
	hookAfterCompact = fault.Register("marts.after-compact",
		"one table compacted (replace snapshot committed), before the next table")
	hookAfterExpire = fault.Register("marts.after-expire",
		"one table's snapshots expired, before the next table")
)

// Report describes one Refresh.
type Report struct {
	RunID    string
	Started  time.Time
	Duration time.Duration
	// Snapshots the marts were built from (0: empty table).
	SilverSnapshot   int64
	SessionsSnapshot int64
	BronzeSnapshot   int64
	// Scope is what was rebuilt: "full (why)" or the count of days.
	Scope string
	// Rows written per gold mart, by identifier.
	Rows map[string]int64
	// Models is what was built of each user model, in build order.
	Models []ModelReport
	Checks []Check
	// Highlights are the marts' headline and top rows, read back after the
	// rebuild (empty when that read failed; the refresh does not fail for it).
	Highlights Highlights
	// Err is why the refresh could not run to its end ("" when it did,
	// whatever its checks found).
	Err string
}

// Passed reports whether every check passed.
func (r Report) Passed() bool {
	for _, c := range r.Checks {
		if !c.Passed {
			return false
		}
	}
	return len(r.Checks) > 0
}

func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "refresh %s: silver snapshot %d, rebuilt %s, %d marts", r.RunID, r.SilverSnapshot, r.Scope, len(r.Rows))
	for _, id := range GoldTables {
		if n, ok := r.Rows[id]; ok {
			fmt.Fprintf(&b, ", %s %d rows", strings.TrimPrefix(id, "gold."), n)
		}
	}
	for _, md := range r.Models {
		fmt.Fprintf(&b, "; model %s: %s, %d rows", md.Ident, md.Scope, md.Rows)
	}
	pass := 0
	for _, c := range r.Checks {
		if c.Passed {
			pass++
		}
	}
	fmt.Fprintf(&b, "; checks %d/%d passed", pass, len(r.Checks))
	return b.String()
}

// Refresh rebuilds the four gold marts from the committed silver snapshots,
// each only in the units of time whose silver changed since it was written
// (scope.go), writes each back with a full overwrite, runs the five asset
// checks on what was written, and records the checks in ops.asset_checks and
// the run in ops.runs. What it knows of earlier refreshes is read from the
// lake (state.go), so the first Refresh after a restart does what changed
// since the last one before it. It returns an error wrapping
// ErrChecksFailed (with the full Report) when a check fails, and other
// errors when a step could not run (Report.Err says which).
func (m *Marts) Refresh(ctx context.Context) (Report, error) {
	return m.refreshJob(ctx, JobRefresh, "")
}

// Rebuild is Refresh over all of history: every unit of every mart is
// rebuilt and every silver id and bronze offset counted, whatever the lake
// records. It is the explicit full pass (for example after restoring gold
// from elsewhere), never needed on the path to ready.
func (m *Marts) Rebuild(ctx context.Context) (Report, error) {
	return m.refreshJob(ctx, JobRebuild, "a rebuild was asked for")
}

func (m *Marts) refreshJob(ctx context.Context, job, whole string) (Report, error) {
	var rep Report
	run, err := m.runJob(ctx, job, &m.mu, func(ctx context.Context, runID string) (string, error) {
		var err error
		rep, err = m.refresh(ctx, runID, whole)
		return rep.String(), err
	})
	rep.RunID, rep.Started, rep.Duration = run.ID, run.Started, run.Duration
	if err != nil && !errors.Is(err, ErrChecksFailed) {
		rep.Err = err.Error()
	}
	if rep.RunID != "" {
		m.lastMu.Lock()
		m.lastReport = &rep
		m.lastMu.Unlock()
	}
	return rep, err
}

// LastReport returns the report of the newest Refresh this Marts ran
// (false: none yet).
func (m *Marts) LastReport() (Report, bool) {
	m.lastMu.Lock()
	defer m.lastMu.Unlock()
	if m.lastReport == nil {
		return Report{}, false
	}
	return *m.lastReport, true
}

// refresh runs on one OS thread. DuckDB allocates with jemalloc, whose
// arenas are per OS thread and keep what a query freed for that thread's
// next query. Go runs the calls of one goroutine on whichever thread is
// free, so each query could land in another arena, and a refresh late in a
// day held one query's peak per arena at once (+138 MiB against +78 on one
// thread under a 64MB memory_limit, BenchmarkRefreshLateInTheDay). One
// thread: one arena, reused. Lake calls run off this thread (offthread.go).
// whole, when not "", rebuilds every unit of every mart and counts every
// id and offset, for that reason (Rebuild).
func (m *Marts) refresh(ctx context.Context, runID, whole string) (Report, error) {
	rep := Report{RunID: runID, Rows: map[string]int64{}}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d, err := m.openDuck(ctx)
	if err != nil {
		return rep, err
	}
	closed := false
	closeDuck := func() {
		if !closed {
			closed = true
			_ = d.Close()
		}
	}
	defer closeDuck()
	if _, err := d.db.ExecContext(ctx, fmt.Sprintf("SET VARIABLE top_n = %d; SET VARIABLE hot_max_candidates = %d", m.cfg.TopN, m.cfg.hotMaxCandidates)); err != nil {
		return rep, fmt.Errorf("set top_n and hot_max_candidates: %w", err)
	}
	// The gold tables as they are: the units a mart does not rebuild are
	// kept from here, and each says what it was built from.
	gold := map[string]table.Files{}
	for _, mt := range marts {
		f, err := planGold(ctx, m.lake, mt)
		if err != nil {
			return rep, err
		}
		gold[mt.ident] = f
		if err := d.attachWhere(ctx, "gold_prev."+strings.TrimPrefix(mt.ident, "gold."), f, ""); err != nil {
			return rep, err
		}
	}
	m.loadChecked(ctx)
	if whole != "" {
		m.bronzeSeen, m.idsSeen = nil, nil
	}
	// Pin the inputs once: the marts and the checks use the same files.
	sc, err := m.attachInputs(ctx, d, gold, whole)
	if err != nil {
		return rep, err
	}
	rep.SilverSnapshot, rep.SessionsSnapshot, rep.BronzeSnapshot = sc.allEdits.SnapshotID, sc.sessFiles.SnapshotID, sc.bronze
	rep.Scope = sc.String()
	for i, mt := range marts {
		n, err := m.buildMart(ctx, d, i, mt, sc, runID)
		if err != nil {
			return rep, err
		}
		rep.Rows[mt.ident] = n
		fault.Hit(hookAfterGoldWrite)
	}
	planned := map[string]table.Files{}
	for _, mt := range marts {
		f, err := planGold(ctx, m.lake, mt)
		if err != nil {
			return rep, err
		}
		planned[mt.ident] = f
		if err := d.attach(ctx, mt.ident, f); err != nil {
			return rep, err
		}
	}
	if h, err := highlights(ctx, d); err == nil {
		rep.Highlights = h
	} else {
		m.cfg.Logger.Warn("marts: read highlights", "err", err)
	}
	// The checks compare the rebuilt days of gold, read back, with the
	// same days of silver.
	for _, mt := range marts {
		if err := d.attachWhere(ctx, mt.ident, planned[mt.ident], sc.goldFilter(mt)); err != nil {
			return rep, err
		}
	}
	if rep.Checks, err = m.runChecks(ctx, d); err != nil {
		return rep, err
	}
	// The user's models, in a session of their own: this one's memory
	// goes back first.
	closeDuck()
	// The models read silver as the marts did, and the marts as written.
	pre := map[string]table.Files{table.SilverEdits: sc.allEdits, table.EditorSessions: sc.allSessions}
	for id, f := range planned {
		pre[id] = f
	}
	checks, models, err := m.buildModels(ctx, runID, pre)
	rep.Models = models
	if err != nil {
		return rep, err
	}
	rep.Checks = append(rep.Checks, checks...)
	if err := m.recordChecks(ctx, runID, rep.Checks); err != nil {
		return rep, err
	}
	var failed []string
	for _, c := range rep.Checks {
		if !c.Passed {
			failed = append(failed, c.Name)
		}
	}
	if len(failed) > 0 {
		return rep, fmt.Errorf("refresh %s: %w: %s", runID, ErrChecksFailed, strings.Join(failed, ", "))
	}
	return rep, nil
}

// attachInputs plans silver (with time bounds), bronze and the stream
// progress table, decides the scope against what each gold mart (as
// planned: gold) was built from, or rebuilds every unit for whole when not
// "", and attaches silver.edits and silver.editor_sessions limited to the
// days in scope, silver.edits_hours limited to the hours of
// wiki_activity_hourly in scope, silver.edits_new and silver.edits_old (the
// days in scope of the files the last passing uniqueness check had not
// covered, and of those it had: checks_unique.go) and silver.edits_recent
// for hot_pages.
func (m *Marts) attachInputs(ctx context.Context, d *duck, gold map[string]table.Files, whole string) (scope, error) {
	edits, err := m.lake.DataFilesWithBounds(ctx, table.SilverEdits, "event_time")
	if err != nil {
		return scope{}, fmt.Errorf("plan %s: %w", table.SilverEdits, err)
	}
	sessions, err := m.lake.DataFilesWithBounds(ctx, table.EditorSessions, "session_start")
	if err != nil {
		return scope{}, fmt.Errorf("plan %s: %w", table.EditorSessions, err)
	}
	prev, why := map[string]prints{}, map[string]string{}
	for _, mt := range marts {
		if unitOf(mt) == 0 {
			continue
		}
		if whole != "" {
			why[mt.ident] = whole
			continue
		}
		input, in := table.SilverEdits, edits
		if mt.sessions {
			input, in = table.EditorSessions, sessions
		}
		prev[mt.ident], why[mt.ident] = previousPrints(gold[mt.ident], input, in, unitOf(mt))
	}
	sc := planScope(prev, why, edits, sessions, m.fileKey())
	sc.allSessions = sessions
	inDays := unitFilter("event_time", sc.days, unitDay)
	if err := d.attachWhere(ctx, table.SilverEdits, sc.editFiles, inDays); err != nil {
		return sc, err
	}
	if err := d.attachWhere(ctx, table.SilverEdits+"_hours", sc.hourFiles, unitFilter("event_time", sc.hours, unitHour)); err != nil {
		return sc, err
	}
	if err := m.attachUnseen(ctx, d, sc, inDays); err != nil {
		return sc, err
	}
	if err := d.attachWhere(ctx, table.EditorSessions, sc.sessFiles, unitFilter("session_start", sc.sessDays, unitDay)); err != nil {
		return sc, err
	}
	if err := d.attach(ctx, table.SilverEdits+"_recent", sc.recent); err != nil {
		return sc, err
	}
	if sc.bronze, err = m.attachBronze(ctx, d); err != nil {
		return sc, err
	}
	if _, err := d.attachFromLake(ctx, m.lake, table.StreamProgress); err != nil {
		return sc, err
	}
	return sc, nil
}

// buildMart materialises one mart in DuckDB, reads it back into Arrow and
// overwrites the gold table with it, recording in the same commit the
// fingerprints of the silver units it now holds (state.go). It returns the
// number of rows. Outside a full rebuild of the mart the units out of scope
// are kept from the gold table as it was (gold_prev).
func (m *Marts) buildMart(ctx context.Context, d *duck, i int, mt mart, sc scope, runID string) (int64, error) {
	q, err := mt.sql()
	if err != nil {
		return 0, err
	}
	if mt.prepare != nil {
		if err := mt.prepare(ctx, d); err != nil {
			return 0, fmt.Errorf("build %s: %w", mt.ident, err)
		}
	}
	tmp := fmt.Sprintf("main.build_%d", i)
	read := "SELECT * FROM " + tmp
	if mt.byHours {
		// In chunks of at most Config.ChunkRows edits of the hours in
		// scope (silver.edits_hours), silver.edits each chunk's edits;
		// then silver.edits is the days in scope again.
		if err := m.buildHourly(ctx, d, tmp, q, sc); err != nil {
			return 0, fmt.Errorf("build %s: %w", mt.ident, err)
		}
		read += " ORDER BY " + mt.order
	} else if _, err := d.db.ExecContext(ctx, "CREATE OR REPLACE TABLE "+tmp+" AS "+q); err != nil {
		return 0, fmt.Errorf("build %s: %w", mt.ident, err)
	}
	if !sc.of(mt).full && mt.dayCol != "" {
		keep := fmt.Sprintf("SELECT * FROM gold_prev.%s WHERE NOT (%s)", quoteIdent(strings.TrimPrefix(mt.ident, "gold.")), sc.goldFilter(mt))
		merged := fmt.Sprintf("main.merged_%d", i)
		if _, err := d.db.ExecContext(ctx, "CREATE OR REPLACE TABLE "+merged+" AS SELECT * FROM ("+keep+" UNION ALL BY NAME SELECT * FROM "+tmp+") ORDER BY "+mt.order); err != nil {
			return 0, fmt.Errorf("merge %s with the days kept: %w", mt.ident, err)
		}
		tmp = merged
		read = "SELECT * FROM " + tmp
	}
	rows, err := d.db.QueryContext(ctx, read)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", mt.ident, err)
	}
	recs, err := rowsToRecords(rows, mt.schema)
	rows.Close()
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", mt.ident, err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	var props map[string]string
	switch {
	case unitOf(mt) == unitHour:
		props, err = builtFromProps(runID, table.SilverEdits, sc.allEdits, unitHour, sc.editHours)
	case mt.sessions:
		props, err = builtFromProps(runID, table.EditorSessions, sc.sessFiles, unitDay, sc.sessions)
	case unitOf(mt) == unitDay:
		props, err = builtFromProps(runID, table.SilverEdits, sc.allEdits, unitDay, sc.edits)
	}
	if err != nil {
		return 0, err
	}
	if err := m.lake.Overwrite(ctx, mt.ident, mt.schema, recs, props); err != nil {
		return 0, fmt.Errorf("write %s: %w", mt.ident, err)
	}
	return n, nil
}

// hoursInScope counts the edits of each hour a refresh rebuilds.
const hoursInScope = `SELECT date_trunc('hour', event_time) AS h, count(*) FROM silver.edits_hours GROUP BY h ORDER BY h`

// buildHourly builds the hourly mart q into tmp a few hours at a time
// (buildChunked), silver.edits pointing at each chunk's hours, and points
// silver.edits back at the days in scope.
func (m *Marts) buildHourly(ctx context.Context, d *duck, tmp, q string, sc scope) error {
	chunks, err := d.unitChunks(ctx, hoursInScope, unitHour)
	if err != nil {
		return err
	}
	err = d.buildChunked(ctx, tmp, q, chunks, func(from, to time.Time) error {
		us := unitsIn(from, to, unitHour)
		return d.attachWhere(ctx, table.SilverEdits, overlapping(sc.hourFiles, us.list, unitHour), unitFilter("event_time", us, unitHour))
	})
	if rerr := d.attachWhere(ctx, table.SilverEdits, sc.editFiles, unitFilter("event_time", sc.days, unitDay)); err == nil {
		err = rerr
	}
	return err
}

// Check runs the five asset checks against the lake as it is now (gold as
// last written, silver and bronze as committed), records them in
// ops.asset_checks and returns them. Unlike Refresh it does not rebuild gold.
func (m *Marts) Check(ctx context.Context) ([]Check, error) {
	var checks []Check
	_, err := m.runJob(ctx, JobCheck, &m.mu, func(ctx context.Context, runID string) (string, error) {
		runtime.LockOSThread() // one jemalloc arena (see refresh)
		defer runtime.UnlockOSThread()
		d, err := m.openDuck(ctx)
		if err != nil {
			return "", err
		}
		defer d.Close()
		m.loadChecked(ctx)
		if _, err := m.attachInputs(ctx, d, nil, "a check of every unit"); err != nil {
			return "", err
		}
		for _, mt := range marts {
			if err := d.attachGold(ctx, m.lake, mt); err != nil {
				return "", err
			}
		}
		if checks, err = m.runChecks(ctx, d); err != nil {
			return "", err
		}
		if err := m.recordChecks(ctx, runID, checks); err != nil {
			return "", err
		}
		var failed []string
		for _, c := range checks {
			if !c.Passed {
				failed = append(failed, c.Name)
			}
		}
		if len(failed) > 0 {
			return "", fmt.Errorf("check %s: %w: %s", runID, ErrChecksFailed, strings.Join(failed, ", "))
		}
		return fmt.Sprintf("%d checks passed", len(checks)), nil
	})
	return checks, err
}
