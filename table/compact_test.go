package table_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/table"
)

// TestCompactTiersBoundFilesAndRewrites streams many tiny commits into one
// partition and compacts after each, as the maintenance loop does: the live
// files stay bounded (at most about FanIn per tier), no row is lost, and
// every byte is rewritten a bounded number of times (once per tier), not at
// every compaction as a plain "merge every small file" policy would.
func TestCompactTiersBoundFilesAndRewrites(t *testing.T) {
	l := openLake(t, table.Config{Dir: t.TempDir()})
	ctx := context.Background()
	pol := table.CompactPolicy{TargetBytes: 64 << 20, FanIn: 4}
	const commits, perCommit = 240, 20
	var rewritten int64
	maxFiles := int64(0)
	for id := int64(1); id <= commits; id++ {
		// One partition: offsets 0..4799 s after baseTime's next midnight.
		mustCommit(t, l, table.Bronze, batchOf("bronze", id, bronzeRecord(0, 120+(id-1)*perCommit, perCommit)))
		res, err := l.Compact(ctx, table.Bronze, pol)
		if err != nil {
			t.Fatalf("commit %d: compact: %v", id, err)
		}
		rewritten += res.RowsMoved
		st, err := l.Stats(ctx, table.Bronze)
		if err != nil {
			t.Fatal(err)
		}
		maxFiles = max(maxFiles, st.DataFiles)
	}
	st, err := l.Stats(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != commits*perCommit {
		t.Fatalf("rows after compaction: got %d, want %d", st.Records, commits*perCommit)
	}
	rows, seen := scanOffsets(t, l, table.Bronze)
	if rows != commits*perCommit || len(seen) != commits*perCommit {
		t.Fatalf("scan: got %d rows (%d distinct offsets), want %d", rows, len(seen), commits*perCommit)
	}
	// Tiers of row counts by factors of 4: 4,800 rows in files of 20 span
	// tiers 2 to 6, each holding fewer than FanIn files between compactions
	// (one more may just have been added).
	tiers := int64(math.Ceil(math.Log(float64(st.Records)) / math.Log(float64(pol.FanIn))))
	if limit := tiers*int64(pol.FanIn) + 1; maxFiles > limit {
		t.Errorf("live data files peaked at %d, want at most %d (%d tiers)", maxFiles, limit, tiers)
	}
	// Each row climbs at least one tier per rewrite: rows rewritten are
	// bounded by the tiers times the rows, not by the number of compactions
	// (merging every small file each time would move about
	// commits x rows / 2 = 576,000).
	if limit := tiers * st.Records; rewritten > limit {
		t.Errorf("rows rewritten by compaction: %d for a %d-row table, want at most %d", rewritten, st.Records, limit)
	}
	t.Logf("%d commits: live files peaked at %d, now %d; %d rows rewritten for %d rows (%d bytes)",
		commits, maxFiles, st.DataFiles, rewritten, st.Records, st.DataBytes)
}

// TestCompactColdPartitions: once a day partition has ended ColdAfter ago,
// all of its small files are merged, whatever their tiers.
func TestCompactColdPartitions(t *testing.T) {
	l := openLake(t, table.Config{Dir: t.TempDir()})
	ctx := context.Background()
	for id := int64(1); id <= 3; id++ {
		// Each batch straddles baseTime's midnight: two partitions.
		mustCommit(t, l, table.Bronze, batchOf("bronze", id, bronzeRecord(0, (id-1)*200, 200)))
	}
	pol := table.CompactPolicy{TargetBytes: 64 << 20, FanIn: 8, ColdAfter: time.Hour}
	pol.Now = baseTime.Add(30 * time.Minute) // neither day has ended an hour ago
	if res, err := l.Compact(ctx, table.Bronze, pol); err != nil || res.FilesRemoved != 0 {
		t.Fatalf("compact before the days are cold: got %+v %v, want nothing to do", res, err)
	}
	pol.Now = baseTime.Add(72 * time.Hour)
	res, err := l.Compact(ctx, table.Bronze, pol)
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.Stats(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	// Batch 1 wrote the only file of the first day, every batch one of the
	// second: the second day's three files become one.
	if res.FilesRemoved != 3 || st.DataFiles != 2 || st.Records != 600 {
		t.Fatalf("compact cold days: got %+v, table %+v, want the second day's 3 files merged into one, 600 rows", res, st)
	}
}

// TestCompactWhileStreaming: a writer commits as fast as it can while
// compaction runs; compaction still lands (its commit is staged again on the
// new head after a lost race, without rewriting the files again), and no row
// is lost or doubled.
func TestCompactWhileStreaming(t *testing.T) {
	l := openLake(t, table.Config{Dir: t.TempDir()})
	ctx := context.Background()
	for id := int64(1); id <= 16; id++ {
		mustCommit(t, l, table.Bronze, batchOf("bronze", id, bronzeRecord(0, 120+(id-1)*10, 10)))
	}
	stop := make(chan struct{})
	done := make(chan int64)
	go func() {
		id := int64(16)
		for {
			select {
			case <-stop:
				done <- id
				return
			default:
			}
			id++
			rec := bronzeRecord(0, 120+(id-1)*10, 10)
			if _, err := l.CommitBatch(ctx, table.Bronze, batchOf("bronze", id, rec)); err != nil {
				t.Errorf("stream commit %d: %v", id, err)
			}
			rec.Release()
		}
	}()
	var landed int
	for range 3 {
		res, err := l.Compact(ctx, table.Bronze, table.CompactPolicy{TargetBytes: 64 << 20, FanIn: 4})
		if err != nil {
			t.Errorf("compact while streaming: %v", err)
		}
		t.Logf("compact: %+v %v", res, err)
		if res.FilesRemoved > 0 {
			landed++
		}
	}
	close(stop)
	last := <-done
	if landed == 0 {
		t.Errorf("no compaction landed while the stream committed")
	}
	rows, seen := scanOffsets(t, l, table.Bronze)
	if want := last * 10; rows != want || int64(len(seen)) != want {
		t.Fatalf("rows: got %d (%d distinct offsets), want %d", rows, len(seen), want)
	}
	t.Logf("%d compactions landed beside %d stream commits", landed, last-16)
}

// TestCompactKeepsEveryValue: a merge writes exactly the rows of the files
// it replaces, every column of every row, nulls included, across its read
// batches, its row groups and the boundaries of its input files (six files
// of 1,000 events shaped like the real stream's, a third without a key).
func TestCompactKeepsEveryValue(t *testing.T) {
	l := openLake(t, table.Config{Dir: t.TempDir()})
	ctx := context.Background()
	const files, rows = 6, 1000
	commitEventFiles(t, l, 7, files, rows, func(int) bool { return true })
	before := rowStrings(t, l, table.Bronze)
	res, err := l.Compact(ctx, table.Bronze, mergeAll)
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.Stats(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRemoved != files || st.DataFiles != 1 {
		t.Fatalf("inconclusive: compaction replaced %d files and left %d, want all %d merged into one", res.FilesRemoved, st.DataFiles, files)
	}
	after := rowStrings(t, l, table.Bronze)
	if len(after) != len(before) {
		t.Fatalf("rows after the merge: got %d, want %d", len(after), len(before))
	}
	for i := range before {
		if after[i] != before[i] {
			t.Fatalf("row %d after the merge:\n got %.300s\nwant %.300s", i, after[i], before[i])
		}
	}
}

// TestCompactWithPoisonedPageBuffers: compaction's Parquet reader recycles
// its page buffers (pagealloc.go); with every released buffer overwritten,
// a merge of many small files still writes exactly the rows it replaced,
// so no row read keeps bytes of a buffer the reader gave back. Sixty files
// of the real stream's shape, as a minute of bronze commits.
func TestCompactWithPoisonedPageBuffers(t *testing.T) {
	l := openLake(t, table.Config{Dir: t.TempDir()})
	ctx := context.Background()
	const files, rows = 60, 40
	commitEventFiles(t, l, 11, files, rows, func(i int) bool { return i%3 != 0 })
	before := rowStrings(t, l, table.Bronze)
	freed := table.PoisonPageBuffers(t)
	res, err := l.Compact(ctx, table.Bronze, mergeAll)
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRemoved != files {
		t.Fatalf("inconclusive: compaction replaced %d of %d files", res.FilesRemoved, files)
	}
	if n := freed(); n < files {
		t.Fatalf("inconclusive: the merge gave back %d page buffers, want at least one per file", n)
	}
	after := rowStrings(t, l, table.Bronze)
	if !slices.Equal(after, before) {
		t.Fatalf("rows after a merge with recycled page buffers differ: %d rows, want %d", len(after), len(before))
	}
}

// commitEventFiles commits files bronze batches of rows generated events
// each (seed seeds the generator; keyed says which batches carry keys).
func commitEventFiles(t *testing.T, l *table.Lake, seed int64, files, rows int, keyed func(int) bool) {
	t.Helper()
	evs := replay.Generate(seed, files*rows).Events
	for i := range files {
		rec := eventsBronzeRecord(int64(i*rows), evs[i*rows:(i+1)*rows], keyed(i))
		mustCommit(t, l, table.Bronze, batchOf("bronze", int64(i+1), rec))
		rec.Release()
	}
}

// rowStrings scans ident and renders each row, every column with its name
// (null as <null>), sorted.
func rowStrings(t *testing.T, l *table.Lake, ident string) []string {
	t.Helper()
	recs, err := l.Scan(context.Background(), ident)
	if err != nil {
		t.Fatalf("scan %s: %v", ident, err)
	}
	var out []string
	for _, r := range recs {
		for i := range int(r.NumRows()) {
			var b strings.Builder
			for c, col := range r.Columns() {
				v := "<null>"
				if col.IsValid(i) {
					v = col.ValueStr(i)
				}
				fmt.Fprintf(&b, "%s=%s;", r.ColumnName(c), v)
			}
			out = append(out, b.String())
		}
		r.Release()
	}
	slices.Sort(out)
	return out
}
