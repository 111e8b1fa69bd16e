package marts

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"lakehouse/table"
)

// A Refresh rebuilds only the units of time whose silver input changed
// since the gold mart was last written, and keeps the other rows of each
// mart as they were. top_editors_daily and editor_sessions_daily are
// functions of one UTC day of silver each (by day of the edit, by day of
// the session's start), wiki_activity_hourly of one UTC hour, so a day or
// an hour whose set of silver files is the same holds the same rows. A
// unit's fingerprint is a hash of the paths and record counts of the live
// files whose column bounds (from the manifests, without opening a file)
// overlap it; an append, a compaction, a retention delete or a rewrite
// changes it. Late in a day the hourly mart so reads the last hour or two,
// not the day. hot_pages covers the last day before the newest edit and is
// rebuilt every time from the files that reach into that window.
//
// Each mart's previous fingerprints are the ones it recorded in the lake
// when it was written (state.go), so a restart rebuilds what changed since,
// as the next refresh of a running process would. A mart without a usable
// record (never written, written by someone else since, or a silver table
// created again), a silver file without bounds, and the Rebuild job
// rebuild that mart's units all. The checks then run over the same scope:
// the rebuilt units of silver against the rebuilt units of gold, as read
// back from the lake.

// hotWindow is the longest hot_pages window (sql/hot_pages.sql).
const hotWindow = 24 * time.Hour

// The units a Refresh rebuilds: UTC days for the daily marts, UTC hours for
// wiki_activity_hourly. A unit is named by its start in Unix seconds.
const (
	unitDay  = 24 * time.Hour
	unitHour = time.Hour
)

// prints is the fingerprint of each unit a table's files cover.
type prints map[int64]uint64

// fingerprints hashes each file (by its key) into every unit its bounds
// overlap. ok is false when a file has no bounds (it cannot be placed in a
// unit).
func fingerprints(f table.Files, unit time.Duration, key fileKey) (prints, bool) {
	out := prints{}
	for i, p := range f.Paths {
		b := f.Bounds[i]
		if !b.OK {
			return nil, false
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s\x00%d", key(p), b.Rows)
		sum := h.Sum64()
		for u := b.Lower.UTC().Truncate(unit); !u.After(b.Upper); u = u.Add(unit) {
			out[u.Unix()] ^= sum
		}
	}
	return out, true
}

// changedUnits lists the units whose fingerprint differs between prev and
// now, including units now has lost, sorted.
func changedUnits(prev, now prints) []int64 {
	var out []int64
	for u, h := range now {
		if p, ok := prev[u]; !ok || p != h {
			out = append(out, u)
		}
	}
	for u := range prev {
		if _, ok := now[u]; !ok {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// units is what one Refresh rebuilds of one mart: every unit (full, and
// why), or the units listed.
type units struct {
	full   bool
	reason string
	list   []int64
}

// rebuild is units for a mart rebuilt whole.
func rebuild(reason string) units { return units{full: true, reason: reason} }

// scopeOf compares a mart's previous fingerprints (nil: none usable, for
// why) with now's.
func scopeOf(prev prints, why string, now prints, ok bool) units {
	switch {
	case !ok:
		return rebuild("a silver file has no time bounds")
	case prev == nil:
		return rebuild(why)
	}
	return units{list: changedUnits(prev, now)}
}

// scope is what one Refresh rebuilds: per mart rebuilt by units, its units
// (edit days for top_editors_daily, edit hours for wiki_activity_hourly,
// session days for editor_sessions_daily), and the files each reads.
type scope struct {
	days, hours, sessDays units
	editFiles, sessFiles  table.Files // the files the rebuilt days read
	hourFiles             table.Files // the files the rebuilt hours read
	allEdits              table.Files // every live file of silver.edits
	allSessions           table.Files // of silver.editor_sessions
	recent                table.Files // the files reaching into the hot_pages window
	edits, sessions       prints      // the fingerprints now: edit days, session days
	editHours             prints      // and edit hours
	bronze                int64       // bronze's snapshot, planned beside silver
}

// of is the units mt is rebuilt by (full for hot_pages).
func (sc scope) of(mt mart) units {
	switch {
	case mt.dayCol == "":
		return rebuild("rebuilt whole every time")
	case mt.byHours:
		return sc.hours
	case mt.sessions:
		return sc.sessDays
	default:
		return sc.days
	}
}

// unitOf is the length of mt's units (0 for hot_pages).
func unitOf(mt mart) time.Duration {
	switch {
	case mt.dayCol == "":
		return 0
	case mt.byHours:
		return unitHour
	default:
		return unitDay
	}
}

// goldFilter is the predicate keeping a mart's rows in scope.
func (sc scope) goldFilter(mt mart) string {
	if mt.dayCol == "" {
		return "true"
	}
	return unitFilter(quoteIdent(mt.dayCol), sc.of(mt), unitOf(mt))
}

// planScope compares the inputs with what each mart was built from (prev:
// by mart, the fingerprints, or nil and why not). edits and sessions carry
// bounds of event_time and session_start.
func planScope(prev map[string]prints, why map[string]string, edits, sessions table.Files, key fileKey) scope {
	sc := scope{editFiles: edits, hourFiles: edits, sessFiles: sessions, allEdits: edits, recent: recentFiles(edits)}
	var okE, okS, okH bool
	sc.edits, okE = fingerprints(edits, unitDay, key)
	sc.editHours, okH = fingerprints(edits, unitHour, key)
	sc.sessions, okS = fingerprints(sessions, unitDay, key)
	sc.days = scopeOf(prev[TopEditorsDaily], why[TopEditorsDaily], sc.edits, okE)
	sc.hours = scopeOf(prev[WikiActivityHourly], why[WikiActivityHourly], sc.editHours, okH)
	sc.sessDays = scopeOf(prev[EditorSessionsDaily], why[EditorSessionsDaily], sc.sessions, okS)
	if !sc.days.full {
		sc.editFiles = overlapping(edits, sc.days.list, unitDay)
	}
	if !sc.hours.full {
		sc.hourFiles = overlapping(edits, sc.hours.list, unitHour)
	}
	if !sc.sessDays.full {
		sc.sessFiles = overlapping(sessions, sc.sessDays.list, unitDay)
	}
	return sc
}

// overlapping keeps the files whose bounds touch one of units.
func overlapping(f table.Files, units []int64, unit time.Duration) table.Files {
	return keepFiles(f, func(_ string, b table.TimeBounds) bool {
		for _, u := range units {
			start := time.Unix(u, 0)
			if !b.OK || !b.Upper.Before(start) && b.Lower.Before(start.Add(unit)) {
				return true
			}
		}
		return false
	})
}

// recentFiles keeps the files that may hold an edit within hotWindow of
// the newest (every file without bounds, too).
func recentFiles(f table.Files) table.Files {
	var newest time.Time
	for _, b := range f.Bounds {
		if b.OK && b.Upper.After(newest) {
			newest = b.Upper
		}
	}
	return keepFiles(f, func(_ string, b table.TimeBounds) bool {
		return !b.OK || b.Upper.After(newest.Add(-hotWindow))
	})
}

// keepFiles returns the files of f (f carries bounds: DataFilesWithBounds)
// for which keep is true, with their bounds and rows; the table's identity
// (schema, snapshot, UUID, properties) is f's.
func keepFiles(f table.Files, keep func(path string, b table.TimeBounds) bool) table.Files {
	out := f
	out.Paths, out.Bounds, out.Ranges, out.Rows = []string{}, nil, nil, 0
	for i, p := range f.Paths {
		if b := f.Bounds[i]; keep(p, b) {
			out.Paths = append(out.Paths, p)
			out.Bounds = append(out.Bounds, b)
			out.Rows += b.Rows
		}
	}
	return out
}

// unitFilter is a SQL predicate keeping the rows whose expr (a DATE or a
// TIMESTAMPTZ) falls in one of us's units ("true" when us is full). It
// compares expr with each run of consecutive units' bounds, so no row pays
// a time zone conversion (CAST(expr AS DATE) cost DuckDB 0.47 s over a day
// of 1.9 million edits, the ranges 0.07 s) and DuckDB can skip row groups
// by their statistics.
func unitFilter(expr string, us units, unit time.Duration) string {
	if us.full {
		return "true"
	}
	if len(us.list) == 0 {
		return "false"
	}
	sorted := slices.Clone(us.list)
	slices.Sort(sorted)
	step := int64(unit / time.Second)
	lit := func(u int64) string {
		return "TIMESTAMPTZ " + quoteString(time.Unix(u, 0).UTC().Format("2006-01-02 15:04:05+00"))
	}
	var ranges []string
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] <= sorted[j]+step {
			j++
		}
		ranges = append(ranges, fmt.Sprintf("(%s >= %s AND %s < %s)", expr, lit(sorted[i]), expr, lit(sorted[j]+step)))
		i = j + 1
	}
	return "(" + strings.Join(ranges, " OR ") + ")"
}

// String says what was rebuilt: "full (why)" when every mart was rebuilt
// whole for one reason, else per mart "N edit days (M hours), K session
// days", a mart rebuilt whole shown as "all ... (why)".
func (sc scope) String() string {
	if sc.days.full && sc.hours.full && sc.sessDays.full && sc.days.reason == sc.hours.reason && sc.hours.reason == sc.sessDays.reason {
		return "full (" + sc.days.reason + ")"
	}
	part := func(us units, name string) string {
		if us.full {
			return "all " + name + " (" + us.reason + ")"
		}
		return fmt.Sprintf("%d %s", len(us.list), name)
	}
	return fmt.Sprintf("%s (%s), %s", part(sc.days, "edit days"), part(sc.hours, "hours"), part(sc.sessDays, "session days"))
}
