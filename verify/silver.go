package verify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/internal/progress"
	"lakehouse/table"
)

// scanSilver reads silver's event ids as hashes: it counts rows, distinct
// ids and duplicates, the late ids of exp found in silver, and the ids that
// are no edit/new event of bronze (extra). It returns silver's sorted,
// distinct id hashes.
func (r *Report) scanSilver(ctx context.Context, lake *table.Lake, exp Expect, h idHasher, bz *bronzeScan, bar *progress.Reporter) (idSet, error) {
	bar.SetNote("silver")
	late := make(map[string]bool, len(exp.LateIDs))
	for _, id := range exp.LateIDs {
		late[id] = true
	}
	ids := make(idSet, 0, tableRows(ctx, lake, table.SilverEdits))
	extra := map[uint64]string{}
	err := lake.ScanColumns(ctx, table.SilverEdits, []string{"event_id"}, func(rec arrow.RecordBatch) error {
		ic, err := column[*array.String](rec, "event_id")
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			id := ic.Value(i) // points into rec, released after this call
			r.Counts.Silver++
			sum := h.sum(id)
			ids = append(ids, sum)
			if late[id] {
				r.Counts.LateInSilver++
				if len(r.LateIDs) < maxListed {
					r.LateIDs = append(r.LateIDs, strings.Clone(id))
				}
			}
			if !bz.edits.has(sum) {
				r.extraCands = append(r.extraCands, sum)
				if len(extra) < maxListed {
					extra[sum] = strings.Clone(id)
				}
			}
		}
		bar.Add(rec.NumRows())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan silver: %w", err)
	}
	repeated, _ := ids.sortUniq()
	r.Counts.SilverDistinct = int64(len(ids))
	r.extraCands.sortUniq()
	r.Counts.SilverExtra = int64(len(r.extraCands))
	r.extraNames = extra
	r.ExtraIDs = sortedNames(extra)
	if len(repeated) > 0 {
		if r.DuplicateIDs, err = namesOf(ctx, lake, h, repeated[:min(len(repeated), maxListed)]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// namesOf scans silver once more for the ids whose hashes are want.
func namesOf(ctx context.Context, lake *table.Lake, h idHasher, want []uint64) ([]string, error) {
	set := idSet(append([]uint64(nil), want...))
	set.sortUniq()
	names := map[uint64]string{}
	err := lake.ScanColumns(ctx, table.SilverEdits, []string{"event_id"}, func(rec arrow.RecordBatch) error {
		ic, err := column[*array.String](rec, "event_id")
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			if sum := h.sum(ic.Value(i)); set.has(sum) {
				if _, ok := names[sum]; !ok {
					names[sum] = strings.Clone(ic.Value(i))
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan silver for ids: %w", err)
	}
	return sortedNames(names), nil
}

// silverPosition is how far silver had read bronze when verify looked.
type silverPosition struct {
	to      ends
	read    bool   // false: silver has read nothing yet
	unknown string // set when the position names no bronze append
}

// readSilverPosition reads silver's marker (before silver's rows are read).
func readSilverPosition(ctx context.Context, lake *table.Lake) (silverPosition, error) {
	to, read, err := silverReadTo(ctx, lake)
	if errors.Is(err, errSilverPosition) {
		return silverPosition{unknown: err.Error()}, nil
	}
	return silverPosition{to: to, read: read}, err
}

// complete is the second pass over bronze: it decides which edit/new ids
// silver must hold and counts those it does not (missing). An id is
// expected when some occurrence of it is in a bronze batch silver has read
// and on time by onTime's bound; rows of bronze batches after the one
// silver's marker names are pending, never missing.
func (r *Report) complete(ctx context.Context, lake *table.Lake, exp Expect, h idHasher, bz *bronzeScan, silverIDs idSet, pos silverPosition, bar *progress.Reporter) error {
	if pos.unknown != "" {
		r.silverUnknown = pos.unknown
		return nil
	}
	readTo, read := pos.to, pos.read
	bar.SetNote("bronze against silver")
	ot := newOnTime(bz.newest, exp.WatermarkDelay)
	expected := make(idSet, 0, len(silverIDs))
	missing := map[uint64]string{}
	var found idSet // extra candidates this pass finds in bronze
	err := lake.ScanColumns(ctx, table.Bronze, bronzeCols, func(rec arrow.RecordBatch) error {
		rows, err := bronzeBatchOf(rec)
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			end, ok := readTo[int(rows.part.Value(i))]
			pending := !read || !ok || rows.off.Value(i) >= end
			if pending {
				r.Counts.SilverPending++
				if len(r.extraCands) == 0 {
					continue
				}
			}
			e, ok := rows.edit(i, exp.MaxEventAhead)
			if !ok {
				continue
			}
			sum := h.sum(e.ID)
			if len(r.extraCands) > 0 && r.extraCands.has(sum) {
				found = append(found, sum)
			}
			if pending || !ot.expected(rows.ingest(i), e.EventTime) {
				continue
			}
			expected = append(expected, sum)
			if !silverIDs.has(sum) && len(missing) < maxListed {
				missing[sum] = e.ID
			}
		}
		bar.Add(rec.NumRows())
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan bronze against silver: %w", err)
	}
	// A silver id bronze's first pass lacked, found by this later pass,
	// was committed to both while verify read: not extra.
	if len(found) > 0 {
		found.sortUniq()
		r.extraCands = slices.DeleteFunc(r.extraCands, found.has)
		r.Counts.SilverExtra = int64(len(r.extraCands))
		maps.DeleteFunc(r.extraNames, func(h uint64, _ string) bool { return found.has(h) })
		r.ExtraIDs = sortedNames(r.extraNames)
	}
	expected.sortUniq()
	r.Counts.SilverExpected = int64(len(expected))
	r.Counts.SilverMissing, _ = expected.minus(silverIDs, 0)
	r.MissingIDs = sortedNames(missing)
	return nil
}

// tableRows is ident's live rows as its metadata counts them (0 when it
// does not say): a capacity hint.
func tableRows(ctx context.Context, lake *table.Lake, ident string) int64 {
	st, err := lake.Stats(ctx, ident)
	if err != nil || st.Records < 0 {
		return 0
	}
	return st.Records
}

func sortedNames(m map[uint64]string) []string {
	out := make([]string, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
