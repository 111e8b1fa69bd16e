package marts

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"lakehouse/table"
)

// What the marts know between refreshes is kept in the lake, beside what
// it describes, so that a restart (an upgrade, a crash, a reboot) costs
// what changed since the last refresh, not what history holds:
//
//   - A gold mart rebuilt by units of time records, in the commit that
//     writes it, the fingerprint of every unit of silver it was built from
//     (table property lakehouse.marts.built-from). Table properties outlive
//     the commit that set them, so the record counts only while the gold
//     table's live files are the ones that commit left (table.Files'
//     Overwritten): after another writer changed its rows the mart is
//     rebuilt whole.
//   - ops.asset_checks records, in the commit that appends a run's check
//     results, what the passing offsets and uniqueness checks established
//     (lakehouse.marts.checked): bronze's offsets counted per partition, and
//     the silver files whose event ids were found unique. Both are facts
//     about data that does not change under them (data files are immutable;
//     the offsets check re-validates its counts against bronze's row count),
//     and each names the table (by UUID) it is about, so a record older than
//     the lake, or of a table since created again, costs a recount, never a
//     wrong answer.
//
// A full pass over history (every unit rebuilt, every id and offset
// counted) is the explicit Rebuild job, never the path to ready.

const (
	propBuiltFrom = table.PropPrefix + "marts.built-from"
	propChecked   = table.PropPrefix + "marts.checked"
	stateVersion  = 1
)

// builtFrom is a gold mart's record of the silver units it was built from.
type builtFrom struct {
	V      int    `json:"v"`
	Run    string `json:"run"`        // the refresh that wrote it
	Input  string `json:"input"`      // the silver table the units are of
	Table  string `json:"input_uuid"` // that table's UUID
	Unit   int64  `json:"unit_s"`     // the unit, in seconds
	Prints string `json:"prints"`     // encodePrints
}

// builtFromProps are the table properties of a gold overwrite recording
// that run built it from now's units of input (f).
func builtFromProps(run, input string, f table.Files, unit time.Duration, now prints) (map[string]string, error) {
	raw, err := json.Marshal(builtFrom{V: stateVersion, Run: run, Input: input, Table: f.TableUUID,
		Unit: int64(unit / time.Second), Prints: encodePrints(now, unit)})
	if err != nil {
		return nil, fmt.Errorf("encode what %s was built from: %w", input, err)
	}
	return map[string]string{propBuiltFrom: string(raw)}, nil
}

// previousPrints returns the fingerprints gold (a gold mart as planned) was
// built from, if it was built from units of input (as planned now) and its
// record still describes its rows; otherwise nil and why not.
func previousPrints(gold table.Files, input string, in table.Files, unit time.Duration) (prints, string) {
	raw, ok := gold.Properties[propBuiltFrom]
	if !ok {
		return nil, "no record of what it was built from"
	}
	var b builtFrom
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		return nil, fmt.Sprintf("its record of what it was built from is unreadable: %v", err)
	}
	switch {
	case b.V != stateVersion:
		return nil, fmt.Sprintf("its record of what it was built from is of version %d", b.V)
	case !gold.Overwritten:
		return nil, "its rows changed since it recorded what it was built from (another writer)"
	case b.Input != input || b.Table != in.TableUUID:
		return nil, "it was built from another table than " + input + " as it is now"
	case b.Unit != int64(unit/time.Second):
		return nil, fmt.Sprintf("it was built by units of %ds", b.Unit)
	}
	p, err := decodePrints(b.Prints, unit)
	if err != nil {
		return nil, fmt.Sprintf("its record of what it was built from is unreadable: %v", err)
	}
	return p, ""
}

// encodePrints packs fingerprints as base64 of their count (a uvarint)
// and, per unit in order, the unit's distance in units from the previous
// one (a varint; the first from 0) and its 8-byte hash: about 12 bytes a unit (an hour of history
// for wiki_activity_hourly), against about 40 as JSON.
func encodePrints(p prints, unit time.Duration) string {
	step := int64(unit / time.Second)
	units := slices.Sorted(maps.Keys(p))
	buf := binary.AppendUvarint(nil, uint64(len(units)))
	var last int64
	for _, u := range units {
		buf = binary.AppendVarint(buf, u/step-last)
		buf = binary.LittleEndian.AppendUint64(buf, p[u])
		last = u / step
	}
	return base64.RawStdEncoding.EncodeToString(buf)
}

var errBadPrints = errors.New("malformed fingerprints")

func decodePrints(s string, unit time.Duration) (prints, error) {
	step := int64(unit / time.Second)
	buf, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadPrints, err)
	}
	n, k := binary.Uvarint(buf)
	if k <= 0 || n > uint64(len(buf)) {
		return nil, errBadPrints
	}
	buf = buf[k:]
	out := make(prints, n)
	var last int64
	for i := range n {
		d, k := binary.Varint(buf)
		if k <= 0 || len(buf) < k+8 || i > 0 && d <= 0 {
			return nil, errBadPrints
		}
		last += d
		out[last*step] = binary.LittleEndian.Uint64(buf[k:])
		buf = buf[k+8:]
	}
	if len(buf) != 0 {
		return nil, errBadPrints
	}
	return out, nil
}

// seenFiles is a set of data files of one table (by its UUID), each by
// pathKey of its fileKey.
type seenFiles struct {
	table string
	files map[uint64]bool
}

// has reports whether the file whose fileKey is key is in the set.
func (s *seenFiles) has(key string) bool { return s != nil && s.files[pathKey(key)] }

// fileKey names a data file in what the marts record (fingerprints, the
// files the uniqueness check covered): the path relative to the warehouse,
// not the path it is read from, so that a data directory restored from a
// backup or moved (its files then resolve under the new warehouse) keeps
// what it knew instead of rebuilding and recounting all of its history.
type fileKey func(path string) string

func (m *Marts) fileKey() fileKey {
	root := strings.TrimSuffix(m.lake.Warehouse(), "/") + "/"
	return func(p string) string {
		if rel, ok := strings.CutPrefix(p, root); ok {
			return rel
		}
		return p
	}
}

// pathKey identifies a data file by its key: 64 bits of FNV-1a, a
// collision among a lake's files being about as likely as n²/2^65.
func pathKey(p string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(p))
	return h.Sum64()
}

// checked is ops.asset_checks' record of what the passing checks
// established (propChecked).
type checked struct {
	V      int            `json:"v"`
	Bronze *checkedBronze `json:"bronze,omitempty"`
	IDs    *checkedIDs    `json:"ids,omitempty"`
}

type checkedBronze struct {
	Table string        `json:"table"`
	Rows  int64         `json:"rows"`
	Parts []checkedPart `json:"parts"`
}

type checkedPart struct {
	P                              int
	Rows, Distinct, Min, Max, Held int64
}

type checkedIDs struct {
	Table string `json:"table"`
	Files string `json:"files"` // base64 of the sorted 8-byte pathKeys
}

// checkedProps is the table property recording b and ids (nil: not
// established) for ops.asset_checks.
func checkedProps(b *bronzeSeen, ids *seenFiles) (map[string]string, error) {
	c := checked{V: stateVersion}
	if b != nil {
		cb := &checkedBronze{Table: b.table, Rows: b.rows}
		for p, s := range b.stats {
			cb.Parts = append(cb.Parts, checkedPart{P: p, Rows: s.rows, Distinct: s.distinct, Min: s.min, Max: s.max, Held: s.held})
		}
		sort.Slice(cb.Parts, func(i, j int) bool { return cb.Parts[i].P < cb.Parts[j].P })
		c.Bronze = cb
	}
	if ids != nil {
		keys := slices.Sorted(maps.Keys(ids.files))
		buf := make([]byte, 0, 8*len(keys))
		for _, k := range keys {
			buf = binary.LittleEndian.AppendUint64(buf, k)
		}
		c.IDs = &checkedIDs{Table: ids.table, Files: base64.RawStdEncoding.EncodeToString(buf)}
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode what the checks established: %w", err)
	}
	return map[string]string{propChecked: string(raw)}, nil
}

// parseChecked reads ops.asset_checks' record (absent: nothing known).
func parseChecked(props map[string]string) (*bronzeSeen, *seenFiles, error) {
	raw, ok := props[propChecked]
	if !ok {
		return nil, nil, nil
	}
	var c checked
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return nil, nil, fmt.Errorf("read what the checks established (%s): %w", propChecked, err)
	}
	if c.V != stateVersion {
		return nil, nil, fmt.Errorf("read what the checks established (%s): version %d", propChecked, c.V)
	}
	var b *bronzeSeen
	if c.Bronze != nil {
		b = &bronzeSeen{table: c.Bronze.Table, rows: c.Bronze.Rows, stats: map[int]offsetStat{}}
		for _, p := range c.Bronze.Parts {
			b.stats[p.P] = offsetStat{rows: p.Rows, distinct: p.Distinct, min: p.Min, max: p.Max, held: p.Held}
		}
	}
	var ids *seenFiles
	if c.IDs != nil {
		buf, err := base64.RawStdEncoding.DecodeString(c.IDs.Files)
		if err != nil || len(buf)%8 != 0 {
			return nil, nil, fmt.Errorf("read what the checks established (%s): malformed file list", propChecked)
		}
		ids = &seenFiles{table: c.IDs.Table, files: make(map[uint64]bool, len(buf)/8)}
		for i := 0; i < len(buf); i += 8 {
			ids.files[binary.LittleEndian.Uint64(buf[i:])] = true
		}
	}
	return b, ids, nil
}
