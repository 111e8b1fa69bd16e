package marts

import (
	"context"
	"fmt"

	"lakehouse/table"
)

// The uniqueness check (every silver event id once in the days a Refresh
// rebuilt) costs what silver added, not what a day holds. A passing check
// establishes, for each day in scope, that the ids of every silver file
// overlapping that day are unique on that day; files are immutable, so
// that stays true of any subset of them. The next check then splits the
// files of the days in scope into those the last passing check covered
// (silver.edits_old) and the others (silver.edits_new: appends, and the
// files a compaction, a retention delete or a rewrite wrote in place of
// others) and counts the ids of new that repeat within new or appear in
// old: one pass over old's ids probing a hash set of new's. A compaction
// adds rows that are already in silver, but the files it replaced are not
// live any more, so they are in neither view. The first check of a
// process, a check after a failed one and a full refresh count every id.

// attachUnseen attaches silver.edits_new and silver.edits_old, both limited
// to inDays, and sets what the uniqueness check will have covered when it
// passes: the files in scope, and the files it covered before that are
// still live (their days did not change, or they are in scope).
func (m *Marts) attachUnseen(ctx context.Context, d *duck, sc scope, inDays string) error {
	seen := m.idsSeen
	if sc.days.full || seen != nil && seen.table != sc.allEdits.TableUUID {
		// A full refresh counts every id of the table at once; files of a
		// silver table since created again tell nothing.
		seen = nil
	}
	key := m.fileKey()
	unseen := keepFiles(sc.editFiles, func(p string, _ table.TimeBounds) bool { return !seen.has(key(p)) })
	covered := keepFiles(sc.editFiles, func(p string, _ table.TimeBounds) bool { return seen.has(key(p)) })
	pending := &seenFiles{table: sc.allEdits.TableUUID, files: make(map[uint64]bool, len(sc.allEdits.Paths))}
	for _, p := range sc.allEdits.Paths {
		if seen.has(key(p)) {
			pending.files[pathKey(key(p))] = true
		}
	}
	for _, p := range sc.editFiles.Paths {
		pending.files[pathKey(key(p))] = true
	}
	m.idsPending = pending
	if err := d.attachWhere(ctx, table.SilverEdits+"_new", unseen, inDays); err != nil {
		return err
	}
	return d.attachWhere(ctx, table.SilverEdits+"_old", covered, inDays)
}

// maxIDParts bounds the passes of checkSilverUnique (a day of the real
// stream is 8 parts of Config.ChunkRows).
const maxIDParts = 8

// checkSilverUnique: every silver event id in the days in scope appears
// once. It counts the ids of silver.edits_new (grouped, in parts) and the
// rows of silver.edits_old whose id is among them.
func (m *Marts) checkSilverUnique(ctx context.Context, d *duck) (Check, error) {
	m.idsSeen = nil // until this check passes
	newRows, newDistinct, err := countIDs(ctx, d, table.SilverEdits+"_new")
	if err != nil {
		return Check{}, err
	}
	var oldRows, repeated int64
	if err := d.db.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE event_id IN (SELECT event_id FROM silver.edits_new))
		FROM silver.edits_old`).Scan(&oldRows, &repeated); err != nil {
		return Check{}, fmt.Errorf("look up new silver ids among the old: %w", err)
	}
	rows := newRows + oldRows
	dups := newRows - newDistinct + repeated
	distinct := rows - dups
	c := Check{Name: CheckSilverUnique, Asset: table.SilverEdits, Observed: dups, Expected: 0, Passed: dups == 0,
		Numbers: map[string]int64{"rows": rows, "distinct_event_ids": distinct, "duplicate_rows": dups, "rows_checked_new": newRows}}
	c.Message = fmt.Sprintf("%d rows, %d distinct event ids (%d rows of files not checked before)", rows, distinct, newRows)
	if c.Passed {
		m.idsSeen = m.idsPending
	}
	return c, nil
}

// countIDs returns the rows and distinct event ids of view. Grouping per
// id rather than count(DISTINCT): DuckDB spills a grouping past its memory
// limit, a DISTINCT set stays in memory. The ids are grouped in parts of
// about Config.ChunkRows by their hash (an id's copies share a part): a
// day's 1.9 million ids at once filled the memory limit.
func countIDs(ctx context.Context, d *duck, view string) (rows, distinct int64, err error) {
	var inView int64
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM `+qualified(view)).Scan(&inView); err != nil {
		return 0, 0, fmt.Errorf("count %s rows: %w", view, err)
	}
	// At most maxIDParts passes: a Check over weeks of silver reads every
	// id once per pass, and past that DuckDB's grouping spills instead.
	parts := min(maxIDParts, max(1, (inView+d.chunkRows-1)/max(1, d.chunkRows)))
	for p := range parts {
		var r, n int64
		err := d.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT coalesce(sum(n), 0)::BIGINT, count(event_id)
		FROM (SELECT event_id, count(*) AS n FROM %s WHERE hash(event_id) %% %d = %d GROUP BY event_id)`, qualified(view), parts, p)).Scan(&r, &n)
		if err != nil {
			return 0, 0, fmt.Errorf("count %s ids: %w", view, err)
		}
		rows, distinct = rows+r, distinct+n
	}
	return rows, distinct, nil
}
