package table_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"lakehouse/table"
)

// TestFencedCommits: a fenced batch commits only as the continuation of
// the query's marker, and counts as done only if the table's batch of its
// id ends where it does; any other commit of the query (a second process
// with its own ranges, a zombie) is ErrFenced and writes nothing. An
// unfenced batch (a fresh start after a lost checkpoint) is not checked.
func TestFencedCommits(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			l := openLake(t, be.cfg(t, t.TempDir()))
			// batch commits offsets [from, to) of partition 0 as batch id.
			batch := func(id, from, to int64) table.Batch {
				return table.Batch{Query: "bronze", ID: id, Fenced: true,
					Follows: fmt.Sprintf(`{"0":%d}`, from), Offsets: fmt.Sprintf(`{"0":%d}`, to),
					Records: nil}
			}
			commit := func(b table.Batch, rows bool) (table.Result, error) {
				t.Helper()
				if rows {
					b.Records = append(b.Records, bronzeRecord(0, mustOffset(t, b.Follows), int(mustOffset(t, b.Offsets)-mustOffset(t, b.Follows))))
				}
				return l.CommitBatch(ctx, table.Bronze, b)
			}
			for _, step := range []struct {
				name          string
				b             table.Batch
				wantCommitted bool
				wantErr       error
			}{
				{"first batch", batch(0, 0, 10), true, nil},
				{"its continuation", batch(1, 10, 25), true, nil},
				{"a replay of batch 1", batch(1, 10, 25), false, nil},
				{"a replay of batch 0 (older than the marker)", batch(0, 0, 10), false, nil},
				{"batch 1 of another writer", batch(1, 10, 30), false, table.ErrFenced},
				{"batch 0 of another writer (older than the marker)", batch(0, 0, 12), false, table.ErrFenced},
				{"batch 2 from another writer's start", batch(2, 30, 40), false, table.ErrFenced},
				{"batch 3 skipping batch 2", batch(3, 25, 40), false, table.ErrFenced},
				{"batch 2", batch(2, 25, 40), true, nil},
			} {
				res, err := commit(step.b, true)
				if !errors.Is(err, step.wantErr) || (err == nil && res.Committed != step.wantCommitted) {
					t.Fatalf("%s: got committed %v, %v; want %v, %v", step.name, res.Committed, err, step.wantCommitted, step.wantErr)
				}
			}
			rows, seen := scanOffsets(t, l, table.Bronze)
			if rows != 40 || len(seen) != 40 {
				t.Fatalf("bronze holds %d rows, %d distinct offsets; want 40 and 40 (nothing of the refused commits)", rows, len(seen))
			}
			fresh := batch(3, 0, 5)
			fresh.Fenced = false
			if res, err := commit(fresh, true); err != nil || !res.Committed {
				t.Fatalf("an unfenced batch: got %v, %v; want committed", res.Committed, err)
			}
		})
	}
}

func mustOffset(t *testing.T, s string) int64 {
	t.Helper()
	var off int64
	if _, err := fmt.Sscanf(s, `{"0":%d}`, &off); err != nil {
		t.Fatalf("offsets %q: %v", s, err)
	}
	return off
}
