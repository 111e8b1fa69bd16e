package marts

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"lakehouse/table"
)

// A Refresh rebuilds only the UTC days whose silver input changed since the
// previous Refresh of this process, and keeps the other days of each mart
// as it wrote them. The daily marts are functions of one day of silver
// each (wiki_activity_hourly by hour, top_editors_daily by day of the
// edit, editor_sessions_daily by day of the session's start), so a day
// whose set of silver files is the same holds the same rows. A day's
// fingerprint is a hash of the paths and record counts of the live files
// whose column bounds (from the manifests, without opening a file) overlap
// it; an append, a compaction, a retention delete or a rewrite changes it.
// hot_pages covers the last day before the newest edit and is rebuilt every
// time from the files that reach into that window.
//
// The previous fingerprints are kept in memory only: the first Refresh of
// a process, a Refresh after one that failed, and a Refresh that finds a
// gold table at another snapshot than the one it wrote rebuild everything.
// The checks then run over the same scope: the rebuilt days of silver
// against the rebuilt days of gold, as read back from the lake.

// hotWindow is the longest hot_pages window (sql/hot_pages.sql).
const hotWindow = 24 * time.Hour

// dayKey is a UTC day as DuckDB prints a DATE.
type dayKey string

func dayOf(t time.Time) dayKey { return dayKey(t.UTC().Format(time.DateOnly)) }

// dayPrints is the fingerprint of each day a table's files cover.
type dayPrints map[dayKey]uint64

// fingerprints hashes each file into every day its bounds overlap. ok is
// false when a file has no bounds (it cannot be placed in a day).
func fingerprints(f table.Files) (dayPrints, bool) {
	out := dayPrints{}
	for i, p := range f.Paths {
		b := f.Bounds[i]
		if !b.OK {
			return nil, false
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s\x00%d", p, b.Rows)
		sum := h.Sum64()
		for d := b.Lower.UTC().Truncate(24 * time.Hour); !d.After(b.Upper); d = d.Add(24 * time.Hour) {
			out[dayOf(d)] ^= sum
		}
	}
	return out, true
}

// changedDays lists the days whose fingerprint differs between prev and
// now, including days now has lost, sorted.
func changedDays(prev, now dayPrints) []dayKey {
	var out []dayKey
	for d, h := range now {
		if p, ok := prev[d]; !ok || p != h {
			out = append(out, d)
		}
	}
	for d := range prev {
		if _, ok := now[d]; !ok {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// incState is what the previous successful Refresh built from.
type incState struct {
	edits, sessions dayPrints
	gold            map[string]int64 // snapshot each gold table was left at
}

// scope is what one Refresh rebuilds. full: everything (days unused).
type scope struct {
	full                 bool
	reason               string // why full, for the report
	editDays, sessDays   []dayKey
	editFiles, sessFiles table.Files // the files the rebuilt days read
	recent               table.Files // the files reaching into the hot_pages window
	edits, sessions      dayPrints
	bronze               int64 // bronze's snapshot, planned beside silver
}

// goldFilter is the predicate keeping a mart's rows in scope.
func (sc scope) goldFilter(mt mart) string {
	switch {
	case mt.dayCol == "":
		return "true"
	case mt.sessions:
		return sc.dayFilter(quoteIdent(mt.dayCol), sc.sessDays)
	default:
		return sc.dayFilter(quoteIdent(mt.dayCol), sc.editDays)
	}
}

// planScope compares the inputs with the previous Refresh. edits and
// sessions carry bounds of event_time and session_start; gold is each gold
// table's current snapshot (0: none).
func planScope(prev *incState, edits, sessions table.Files, gold map[string]int64) scope {
	sc := scope{editFiles: edits, sessFiles: sessions, recent: recentFiles(edits)}
	var okE, okS bool
	sc.edits, okE = fingerprints(edits)
	sc.sessions, okS = fingerprints(sessions)
	switch {
	case prev == nil:
		sc.full, sc.reason = true, "first refresh of this process"
	case !okE || !okS:
		sc.full, sc.reason = true, "a silver file has no time bounds"
	case !maps.Equal(prev.gold, gold):
		sc.full, sc.reason = true, "a gold table is not at the snapshot the last refresh wrote"
	}
	if sc.full {
		return sc
	}
	sc.editDays = changedDays(prev.edits, sc.edits)
	sc.sessDays = changedDays(prev.sessions, sc.sessions)
	sc.editFiles = overlapping(edits, sc.editDays)
	sc.sessFiles = overlapping(sessions, sc.sessDays)
	return sc
}

// overlapping keeps the files whose bounds touch one of days.
func overlapping(f table.Files, days []dayKey) table.Files {
	starts := make([]time.Time, len(days))
	for i, d := range days {
		starts[i], _ = time.Parse(time.DateOnly, string(d))
	}
	out := table.Files{Schema: f.Schema, SnapshotID: f.SnapshotID, Paths: []string{}}
	for i, p := range f.Paths {
		b := f.Bounds[i]
		for _, start := range starts {
			if !b.OK || !b.Upper.Before(start) && b.Lower.Before(start.Add(24*time.Hour)) {
				out.Paths = append(out.Paths, p)
				out.Bounds = append(out.Bounds, b)
				break
			}
		}
	}
	return out
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
	out := table.Files{Schema: f.Schema, SnapshotID: f.SnapshotID, Paths: []string{}}
	for i, p := range f.Paths {
		if b := f.Bounds[i]; !b.OK || b.Upper.After(newest.Add(-hotWindow)) {
			out.Paths = append(out.Paths, p)
			out.Bounds = append(out.Bounds, b)
		}
	}
	return out
}

// dayFilter is a SQL predicate keeping the rows whose expr falls on one of
// days ("true" for a full refresh).
func (sc scope) dayFilter(expr string, days []dayKey) string {
	if sc.full {
		return "true"
	}
	if len(days) == 0 {
		return "false"
	}
	lits := make([]string, len(days))
	for i, d := range days {
		lits[i] = "DATE " + quoteString(string(d))
	}
	return fmt.Sprintf("CAST(%s AS DATE) IN (%s)", expr, strings.Join(lits, ", "))
}

func (sc scope) String() string {
	if sc.full {
		return "full (" + sc.reason + ")"
	}
	return fmt.Sprintf("%d edit days, %d session days", len(sc.editDays), len(sc.sessDays))
}
