package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/broker"
	"lakehouse/table"
	"lakehouse/verify"
)

// truth is what the lake holds, read by the benchmark's own reader
// (history_scan.go) and the broker's read-only API: what the answers of
// `query` must equal.
type truth struct {
	bronzeRows, bronzeDistinct, bronzeDups int64
	brokerRecords                          int64 // offsets the broker ever gave in the topic: the sum of its partitions' ends
	silverRows                             int64
	newest                                 time.Time // the newest event_time in silver.edits
	cutoff                                 time.Time // newest minus a day: "the last day" is after it
	topWikis                               []wikiCount
	editor                                 *editorSessions
}

type wikiCount struct {
	wiki  string
	edits int64
}

type editorSessions struct {
	wiki, user      string
	sessions, edits int64
}

// topN is how many wikis "the top wikis" are.
const topN = 5

// readTruth reads the truth of the lake in dir (no appliance running on it).
func readTruth(ctx context.Context, dir string) (truth, error) {
	var t truth
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{ReadOnly: true})
	if err != nil {
		return t, fmt.Errorf("open the broker read-only: %w", err)
	}
	parts, err := db.Offsets(ctx, verify.DefaultTopic)
	db.Close()
	if err != nil {
		return t, fmt.Errorf("broker offsets: %w", err)
	}
	for _, p := range parts {
		t.brokerRecords += p.End
	}
	lake, err := table.Open(ctx, table.Config{Dir: dir, ReadOnly: true})
	if err != nil {
		return t, err
	}
	defer lake.Close()
	if err := t.readBronze(ctx, lake); err != nil {
		return t, err
	}
	if err := t.readSilver(ctx, lake); err != nil {
		return t, err
	}
	return t, t.readSessions(ctx, lake)
}

// readBronze counts bronze's rows and distinct (partition, offset) pairs.
func (t *truth) readBronze(ctx context.Context, lake *table.Lake) error {
	files, err := liveFiles(ctx, lake, table.Bronze)
	if err != nil {
		return err
	}
	seen := map[int64]*bitset{}
	n, err := files.scan(ctx, []string{"broker_partition", "broker_offset"}, func(rec arrow.RecordBatch) error {
		part, err := intsOf(rec.Column(0))
		if err != nil {
			return err
		}
		off, err := intsOf(rec.Column(1))
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			b := seen[part(i)]
			if b == nil {
				b = &bitset{}
				seen[part(i)] = b
			}
			if b.set(off(i)) {
				t.bronzeDups++
			} else {
				t.bronzeDistinct++
			}
		}
		return nil
	})
	t.bronzeRows = n
	return err
}

// readSilver counts silver.edits and its edits per wiki in the last day of
// event time (two passes: the newest event time, then the counts).
func (t *truth) readSilver(ctx context.Context, lake *table.Lake) error {
	files, err := liveFiles(ctx, lake, table.SilverEdits)
	if err != nil {
		return err
	}
	var newest int64
	t.silverRows, err = files.scan(ctx, []string{"event_time"}, func(rec arrow.RecordBatch) error {
		ts, err := microsOf(rec.Column(0))
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			newest = max(newest, ts(i))
		}
		return nil
	})
	if err != nil || t.silverRows == 0 {
		return err
	}
	t.newest = time.UnixMicro(newest).UTC()
	t.cutoff = t.newest.Add(-24 * time.Hour)
	cut := t.cutoff.UnixMicro()
	counts := map[string]int64{}
	if _, err := files.scan(ctx, []string{"wiki", "event_time"}, func(rec arrow.RecordBatch) error {
		wiki, err := stringsOf(rec.Column(0))
		if err != nil {
			return err
		}
		ts, err := microsOf(rec.Column(1))
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			if ts(i) > cut {
				counts[wiki(i)]++
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for w, n := range counts {
		t.topWikis = append(t.topWikis, wikiCount{w, n})
	}
	sort.Slice(t.topWikis, func(i, j int) bool {
		a, b := t.topWikis[i], t.topWikis[j]
		return a.edits > b.edits || a.edits == b.edits && a.wiki < b.wiki
	})
	t.topWikis = t.topWikis[:min(topN, len(t.topWikis))]
	return nil
}

// readSessions picks the editor with the most sessions (then the most
// edits, then by wiki and name) and counts their sessions and edits.
func (t *truth) readSessions(ctx context.Context, lake *table.Lake) error {
	files, err := liveFiles(ctx, lake, table.EditorSessions)
	if err != nil {
		return err
	}
	type key struct{ wiki, user string }
	by := map[key]*editorSessions{}
	if _, err := files.scan(ctx, []string{"wiki", "user", "edits"}, func(rec arrow.RecordBatch) error {
		wiki, err := stringsOf(rec.Column(0))
		if err != nil {
			return err
		}
		user, err := stringsOf(rec.Column(1))
		if err != nil {
			return err
		}
		edits, err := intsOf(rec.Column(2))
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			k := key{wiki(i), user(i)}
			e := by[k]
			if e == nil {
				e = &editorSessions{wiki: k.wiki, user: k.user}
				by[k] = e
			}
			e.sessions++
			e.edits += edits(i)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, e := range by {
		if b := t.editor; b == nil || e.sessions > b.sessions || e.sessions == b.sessions &&
			(e.edits > b.edits || e.edits == b.edits && (e.wiki < b.wiki || e.wiki == b.wiki && e.user < b.user)) {
			t.editor = e
		}
	}
	return nil
}

// bitset is a set of non-negative offsets.
type bitset struct{ w []uint64 }

// set adds v and reports whether it was already there. A negative v
// (never a broker offset) counts as already there, so it shows up as a
// duplicate rather than vanishing.
func (b *bitset) set(v int64) bool {
	if v < 0 {
		return true
	}
	i := int(v >> 6)
	if i >= len(b.w) {
		b.w = append(b.w, make([]uint64, i+1-len(b.w)+len(b.w)/2)...)
	}
	m := uint64(1) << (v & 63)
	was := b.w[i]&m != 0
	b.w[i] |= m
	return was
}
