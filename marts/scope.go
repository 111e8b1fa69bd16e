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

// A Refresh rebuilds only the units of time whose silver input changed
// since the previous Refresh of this process, and keeps the other rows of
// each mart as it wrote them. top_editors_daily and editor_sessions_daily
// are functions of one UTC day of silver each (by day of the edit, by day
// of the session's start), wiki_activity_hourly of one UTC hour, so a day
// or an hour whose set of silver files is the same holds the same rows. A
// unit's fingerprint is a hash of the paths and record counts of the live
// files whose column bounds (from the manifests, without opening a file)
// overlap it; an append, a compaction, a retention delete or a rewrite
// changes it. Late in a day the hourly mart so reads the last hour or two,
// not the day. hot_pages covers the last day before the newest edit and is
// rebuilt every time from the files that reach into that window.
//
// The previous fingerprints are kept in memory only: the first Refresh of
// a process, a Refresh after one that failed, and a Refresh that finds a
// gold table at another snapshot than the one it wrote rebuild everything.
// The checks then run over the same scope: the rebuilt units of silver
// against the rebuilt units of gold, as read back from the lake.

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

// fingerprints hashes each file into every unit its bounds overlap. ok is
// false when a file has no bounds (it cannot be placed in a unit).
func fingerprints(f table.Files, unit time.Duration) (prints, bool) {
	out := prints{}
	for i, p := range f.Paths {
		b := f.Bounds[i]
		if !b.OK {
			return nil, false
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s\x00%d", p, b.Rows)
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

// incState is what the previous successful Refresh built from.
type incState struct {
	edits, sessions, editHours prints
	gold                       map[string]int64 // snapshot each gold table was left at
}

// scope is what one Refresh rebuilds. full: everything (units unused).
type scope struct {
	full                 bool
	reason               string // why full, for the report
	editDays, sessDays   []int64
	editHours            []int64     // the hours of wiki_activity_hourly rebuilt
	editFiles, sessFiles table.Files // the files the rebuilt days read
	hourFiles            table.Files // the files the rebuilt hours read
	allEdits             table.Files // every live file of silver.edits
	recent               table.Files // the files reaching into the hot_pages window
	edits, sessions      prints
	hours                prints
	bronze               int64 // bronze's snapshot, planned beside silver
}

// goldFilter is the predicate keeping a mart's rows in scope.
func (sc scope) goldFilter(mt mart) string {
	switch {
	case mt.dayCol == "":
		return "true"
	case mt.byHours:
		return sc.unitFilter(quoteIdent(mt.dayCol), sc.editHours, unitHour)
	case mt.sessions:
		return sc.unitFilter(quoteIdent(mt.dayCol), sc.sessDays, unitDay)
	default:
		return sc.unitFilter(quoteIdent(mt.dayCol), sc.editDays, unitDay)
	}
}

// planScope compares the inputs with the previous Refresh. edits and
// sessions carry bounds of event_time and session_start; gold is each gold
// table's current snapshot (0: none).
func planScope(prev *incState, edits, sessions table.Files, gold map[string]int64) scope {
	sc := scope{editFiles: edits, hourFiles: edits, sessFiles: sessions, allEdits: edits, recent: recentFiles(edits)}
	var okE, okS, okH bool
	sc.edits, okE = fingerprints(edits, unitDay)
	sc.hours, okH = fingerprints(edits, unitHour)
	sc.sessions, okS = fingerprints(sessions, unitDay)
	switch {
	case prev == nil:
		sc.full, sc.reason = true, "first refresh of this process"
	case !okE || !okS || !okH:
		sc.full, sc.reason = true, "a silver file has no time bounds"
	case !maps.Equal(prev.gold, gold):
		sc.full, sc.reason = true, "a gold table is not at the snapshot the last refresh wrote"
	}
	if sc.full {
		return sc
	}
	sc.editDays = changedUnits(prev.edits, sc.edits)
	sc.editHours = changedUnits(prev.editHours, sc.hours)
	sc.sessDays = changedUnits(prev.sessions, sc.sessions)
	sc.editFiles = overlapping(edits, sc.editDays, unitDay)
	sc.hourFiles = overlapping(edits, sc.editHours, unitHour)
	sc.sessFiles = overlapping(sessions, sc.sessDays, unitDay)
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
// for which keep is true, with their bounds.
func keepFiles(f table.Files, keep func(path string, b table.TimeBounds) bool) table.Files {
	out := table.Files{Schema: f.Schema, SnapshotID: f.SnapshotID, Paths: []string{}}
	for i, p := range f.Paths {
		if b := f.Bounds[i]; keep(p, b) {
			out.Paths = append(out.Paths, p)
			out.Bounds = append(out.Bounds, b)
		}
	}
	return out
}

// unitFilter is a SQL predicate keeping the rows whose expr (a DATE or a
// TIMESTAMPTZ) falls in one of units ("true" for a full refresh). It
// compares expr with each run of consecutive units' bounds, so no row pays
// a time zone conversion (CAST(expr AS DATE) cost DuckDB 0.47 s over a day
// of 1.9 million edits, the ranges 0.07 s) and DuckDB can skip row groups
// by their statistics.
func (sc scope) unitFilter(expr string, units []int64, unit time.Duration) string {
	if sc.full {
		return "true"
	}
	if len(units) == 0 {
		return "false"
	}
	sorted := slices.Clone(units)
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

func (sc scope) String() string {
	if sc.full {
		return "full (" + sc.reason + ")"
	}
	return fmt.Sprintf("%d edit days (%d hours), %d session days", len(sc.editDays), len(sc.editHours), len(sc.sessDays))
}
