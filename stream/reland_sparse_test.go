package stream

import (
	"os"
	"testing"
	"time"

	"lakehouse/table"
)

// TestRelandSparseOffsets: on a log whose offsets skip (Kafka's markers;
// brokertest.Sparse) a deleted bronze data file is re-landed from the
// records the log holds: the offsets that hold none are not counted as
// rows the file lost, and afterwards bronze holds every record once.
func TestRelandSparseOffsets(t *testing.T) {
	ctx := ctxT(t, 2*time.Minute)
	db, log, lake := drainSparse(ctx, t)
	files, err := lake.DataFiles(ctx, table.Bronze)
	if err != nil || len(files.Paths) < 2 {
		t.Fatalf("bronze files: %v %v; want 2 or more", files.Paths, err)
	}
	if err := os.Remove(files.Paths[1]); err != nil {
		t.Fatal(err)
	}
	r, err := RelandBronze(ctx, log, lake)
	if err != nil {
		t.Fatalf("reland: %v", err)
	}
	if r.Rows == 0 || r.Snapshot == 0 {
		t.Fatalf("inconclusive: reland found nothing to do (%+v)", r)
	}
	var span int64
	for _, run := range r.Runs {
		span += run.To - run.From
	}
	if span <= r.Rows {
		t.Fatalf("inconclusive: the runs span %d offsets for %d rows: none held no record", span, r.Rows)
	}
	seen := map[pair]int{}
	for _, p := range bronzePairs(t, lake) {
		seen[p]++
	}
	for p, end := range endOffsets(t, db) {
		for k := range end {
			if n := seen[pair{p, 2*k + 1}]; n != 1 {
				t.Fatalf("partition %d offset %d: %d rows after the reland, want 1", p, 2*k+1, n)
			}
		}
	}
	if len(seen) != 3000 {
		t.Fatalf("bronze holds %d distinct offsets after the reland, want 3000", len(seen))
	}
}
