package table_test

import (
	"context"
	"testing"

	"lakehouse/table"
)

// TestRepeatedCompactAndExpire: rounds of commits, compaction and expiry,
// as the marts scheduler runs them. iceberg-go's expiry cleanup re-deletes
// files that manifests of expired snapshots list as already deleted (and an
// earlier expiry removed): that must not fail the expiry.
func TestRepeatedCompactAndExpire(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			l := openLake(t, b.cfg(t, t.TempDir()))
			ctx := context.Background()
			id := int64(0)
			for round := 0; round < 4; round++ {
				for i := 0; i < 3; i++ {
					id++
					mustCommit(t, l, table.Bronze, batchOf("bronze", id, bronzeRecord(0, (id-1)*10, 10)))
				}
				if _, err := l.Compact(ctx, table.Bronze, mergeAll); err != nil {
					t.Fatalf("round %d compact: %v", round, err)
				}
				if _, err := l.ExpireSnapshots(ctx, table.Bronze, 1, 0, 0); err != nil {
					t.Fatalf("round %d expire: %v", round, err)
				}
			}
			rows, seen := scanOffsets(t, l, table.Bronze)
			if rows != id*10 || int64(len(seen)) != id*10 {
				t.Fatalf("rows after maintenance rounds: got %d (%d distinct), want %d", rows, len(seen), id*10)
			}
			if m, ok, err := l.LastCommitted(ctx, table.Bronze, "bronze"); err != nil || !ok || m.Batch != id {
				t.Fatalf("marker: got %+v %v %v, want batch %d", m, ok, err, id)
			}
		})
	}
}
