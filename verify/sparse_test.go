package verify

import (
	"context"
	"errors"
	"strings"
	"testing"

	"lakehouse/broker/brokertest"
	"lakehouse/internal/progress"
)

// TestVerifySparseOffsets: on a log whose offsets skip (Kafka's transaction
// markers; brokertest.Sparse holds records at odd offsets only) verify
// counts the records the broker holds, not End-Start: a bronze holding
// every record once passes with the broker's true count, the offsets that
// hold no record are neither missing nor pending, and a record bronze
// lacks is still found.
func TestVerifySparseOffsets(t *testing.T) {
	sparse := func(f *lakeFixture) [][2]int64 {
		var out [][2]int64
		for _, p := range f.allOffsets(2) {
			out = append(out, [2]int64{p[0], 2*p[1] + 1})
		}
		return out
	}
	t.Run("every record once", func(t *testing.T) {
		f := newFixture(t, 2, 10)
		all := sparse(f)
		f.bronze(t, all[:7])
		f.bronze(t, all[7:])
		f.silver(t, ids(all)...)
		r, err := Run(context.Background(), brokertest.Sparse(f.db), f.lake, Expect{Messages: 20, Silver: 20, DLQ: 0}, progress.Display{})
		if err != nil {
			t.Fatalf("Run: %v\n%+v", err, r.Checks)
		}
		if c := r.Counts; c.Broker != 20 || c.BrokerTrimmed != 0 || c.Bronze != 20 || c.Pending != 0 {
			t.Fatalf("counts: %s", r.CountsJSON())
		}
	})
	t.Run("pending counts records", func(t *testing.T) {
		f := newFixture(t, 2, 10)
		all := sparse(f)
		f.bronze(t, all[:7]) // partition 0 up to offset 13; 3 records and 4 empty offsets after it
		f.silver(t, ids(all[:7])...)
		r, err := Run(context.Background(), brokertest.Sparse(f.db), f.lake, NoExpectations(), progress.Display{})
		if err != nil {
			t.Fatalf("Run: %v\n%+v", err, r.Checks)
		}
		if c := r.Counts; c.Pending != 13 || c.Broker != 20 {
			t.Fatalf("pending %d of broker %d, want 13 of 20 (records, not offsets)", c.Pending, c.Broker)
		}
	})
	t.Run("a missing record", func(t *testing.T) {
		f := newFixture(t, 2, 10)
		all := sparse(f)
		held := append(all[:3:3], all[4:]...) // drops partition 0 offset 7
		f.bronze(t, held)
		f.silver(t, ids(held)...)
		r, err := Run(context.Background(), brokertest.Sparse(f.db), f.lake, NoExpectations(), progress.Display{})
		if !errors.Is(err, ErrFailed) || failedNames(r) != "bronze-offsets" {
			t.Fatalf("Run: %v, failed %q; want bronze-offsets", err, failedNames(r))
		}
		if d := r.Failed()[0].Detail; !strings.Contains(d, "partition 0: 1 missing [7]") {
			t.Fatalf("detail %q, want partition 0: 1 missing [7]", d)
		}
	})
}
