package marts

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"lakehouse/broker"
	"lakehouse/table"
)

// offsetStat is what checkBronzeOffsets needs of one bronze partition:
// its rows, distinct offsets and offset range, and held, the records the
// broker holds (or held, when counted) in min..max: max-min+1 on a dense
// log, fewer on a sparse one (Kafka's transaction markers take offsets).
type offsetStat struct{ rows, distinct, min, max, held int64 }

// bronzeSeen is what the last passing offsets check established: per
// partition, bronze held rows offsets, dense and unique, up to max; rows
// is bronze's row count then (from the manifests).
type bronzeSeen struct {
	table string // bronze's UUID
	stats map[int]offsetStat
	rows  int64
}

// bronzeOffsetStats returns per partition bronze's row count, distinct
// offsets and offset range. After a passing check it reads only the
// offsets beyond what that check saw (prev) (row groups below are skipped by their
// statistics), so its cost follows what bronze added, not bronze's size:
// counting distinct offsets over a week of bronze (21 million rows at the
// real rate) needs a hash set of all of them. The shortcut holds only if
// nothing but appends beyond the old maxima changed bronze: the manifests'
// row count must be the old count plus the new rows (a compaction keeps
// the count; a duplicate or a lost row below the old maxima changes it),
// and the new offsets of each partition must start right after its old
// maximum. Otherwise it counts every row again. how says which it did.
//
// full, when not nil, attaches every bronze file before a count of every
// row (attachBronze attached only those that may hold new offsets). held
// counts the records the broker holds in a partition's from..to-1.
func bronzeOffsetStats(ctx context.Context, d *duck, prev *bronzeSeen, full func() error, held heldFunc) (map[int]offsetStat, string, error) {
	if prev != nil && d.rows[table.Bronze] >= prev.rows {
		parts := slices.Sorted(maps.Keys(prev.stats))
		cases := make([]string, len(parts))
		for i, p := range parts {
			cases[i] = fmt.Sprintf("WHEN %d THEN %d", p, prev.stats[p].max)
		}
		where := "true"
		if len(parts) > 0 {
			where = fmt.Sprintf("broker_offset > CASE broker_partition %s ELSE -1 END AND broker_offset > %d", strings.Join(cases, " "), minMax(prev.stats))
		}
		added, err := queryOffsetStats(ctx, d, where)
		if err != nil {
			return nil, "", err
		}
		var n int64
		ok := true
		out := maps.Clone(prev.stats)
		for p, a := range added {
			n += a.rows
			old, had := prev.stats[p]
			if !had {
				if a.held, err = held(ctx, p, a.min, a.max+1); err != nil {
					return nil, "", err
				}
				out[p] = a
				continue
			}
			between, err := held(ctx, p, old.max+1, a.min)
			if err != nil {
				return nil, "", err
			}
			if between != 0 {
				ok = false
			}
			added, err := held(ctx, p, old.max+1, a.max+1)
			if err != nil {
				return nil, "", err
			}
			out[p] = offsetStat{rows: old.rows + a.rows, distinct: old.distinct + a.distinct, min: old.min, max: a.max, held: old.held + added}
		}
		if ok && prev.rows+n == d.rows[table.Bronze] {
			return out, fmt.Sprintf("%d rows added since the last check", n), nil
		}
	}
	if full != nil {
		if err := full(); err != nil {
			return nil, "", err
		}
	}
	all, err := queryOffsetStats(ctx, d, "true")
	if err != nil {
		return nil, "", err
	}
	for p, a := range all {
		if a.held, err = held(ctx, p, a.min, a.max+1); err != nil {
			return nil, "", err
		}
		all[p] = a
	}
	return all, "every row counted", nil
}

// heldFunc counts the records partition p of the broker holds in from..to-1.
type heldFunc func(ctx context.Context, p int, from, to int64) (int64, error)

// heldIn is the checks' heldFunc over the broker's partitions parts:
// to-from on a dense log (offsets retention has trimmed since included:
// bronze must still have held them), the records read on a sparse one
// (none in a partition the broker does not have).
func (m *Marts) heldIn(parts map[int]broker.PartitionOffsets) heldFunc {
	return func(ctx context.Context, p int, from, to int64) (int64, error) {
		if from >= to {
			return 0, nil
		}
		if !broker.IsSparse(m.log) {
			return to - from, nil
		}
		po, ok := parts[p]
		if !ok {
			return 0, nil
		}
		n, err := broker.CountHeld(ctx, m.log, m.cfg.Topic, po, from, to)
		if err != nil {
			return 0, fmt.Errorf("count the records %s/%d holds: %w", m.cfg.Topic, p, err)
		}
		return n, nil
	}
}

// attachBronze attaches bronze.recentchange for the checks and returns the
// snapshot it was planned from. After a passing offsets check only the
// files that may hold an offset beyond what it saw are in the view (a file
// whose offsets all end at or below the smallest partition maximum holds
// none), with the whole table's row count: on a remote warehouse every
// file in a view is copied to local disk first, and a week of bronze
// would be copied at every refresh otherwise. The whole list is kept in
// m.bronzeAll for a check that has to count every row again.
func (m *Marts) attachBronze(ctx context.Context, d *duck) (int64, error) {
	m.bronzeFloor.offset, m.bronzeFloor.ok = m.readBronzeFloor(ctx)
	f, err := m.lake.DataFilesWithRange(ctx, table.Bronze, "broker_offset")
	if err != nil {
		return 0, fmt.Errorf("plan %s: %w", table.Bronze, err)
	}
	m.bronzeAll = nil
	if prev := m.bronzeSeen; prev != nil && prev.table != f.TableUUID {
		m.bronzeSeen = nil // counted in a table since created again
	}
	m.bronzeTable = f.TableUUID
	view := f
	if prev := m.bronzeSeen; prev != nil && len(prev.stats) > 0 {
		floor := minMax(prev.stats)
		view = table.Files{Schema: f.Schema, SnapshotID: f.SnapshotID, Rows: f.Rows, Paths: []string{}}
		for i, p := range f.Paths {
			if r := f.Ranges[i]; !r.OK || r.Upper > floor {
				view.Paths = append(view.Paths, p)
			}
		}
		m.bronzeAll = &f
	}
	return f.SnapshotID, d.attach(ctx, table.Bronze, view)
}

// bronzeQuery is the stream query that lands bronze; its marker holds the
// end offset of every partition bronze has committed.
const bronzeQuery = "bronze"

// readBronzeFloor returns the smallest of the partitions' newest offsets
// in bronze's marker (partitions holding none left out). Read before the
// files are planned, it is at or below each partition's newest offset in
// them, so a scan from it down never misses a partition's newest rows.
func (m *Marts) readBronzeFloor(ctx context.Context) (int64, bool) {
	mk, ok, err := m.lake.LastCommitted(ctx, table.Bronze, bronzeQuery)
	if err != nil || !ok {
		return 0, false
	}
	var ends map[string]int64
	if json.Unmarshal([]byte(mk.Offsets), &ends) != nil {
		return 0, false
	}
	floor, any := int64(0), false
	for _, end := range ends {
		if end > 0 && (!any || end-1 < floor) {
			floor, any = end-1, true
		}
	}
	return floor, any
}

// attachAllBronze attaches every bronze file if attachBronze left some out.
func (m *Marts) attachAllBronze(ctx context.Context, d *duck) error {
	if m.bronzeAll == nil {
		return nil
	}
	f := *m.bronzeAll
	m.bronzeAll = nil
	return d.attach(ctx, table.Bronze, f)
}

// minMax is the smallest of the partitions' maxima: no new offset is at
// or below it, so the scan skips the row groups that end there.
func minMax(stats map[int]offsetStat) int64 {
	first := true
	var lo int64
	for _, s := range stats {
		if first || s.max < lo {
			lo, first = s.max, false
		}
	}
	return lo
}

func queryOffsetStats(ctx context.Context, d *duck, where string) (map[int]offsetStat, error) {
	// Distinct offsets by grouping per offset first: DuckDB spills a
	// grouping past its memory limit, a count(DISTINCT) keeps each
	// partition's set in memory (a full count reads every offset of bronze).
	rows, err := d.db.QueryContext(ctx, `SELECT broker_partition, sum(n)::BIGINT, count(*), min(broker_offset), max(broker_offset)
		FROM (SELECT broker_partition, broker_offset, count(*) AS n FROM bronze.recentchange WHERE `+where+` GROUP BY 1, 2)
		GROUP BY broker_partition ORDER BY broker_partition`)
	if err != nil {
		return nil, fmt.Errorf("count bronze offsets: %w", err)
	}
	defer rows.Close()
	out := map[int]offsetStat{}
	for rows.Next() {
		var p int
		var s offsetStat
		if err := rows.Scan(&p, &s.rows, &s.distinct, &s.min, &s.max); err != nil {
			return nil, fmt.Errorf("count bronze offsets: %w", err)
		}
		out[p] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count bronze offsets: %w", err)
	}
	return out, nil
}
