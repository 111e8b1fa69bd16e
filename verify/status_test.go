package verify

import (
	"lakehouse/internal/observe"
	"testing"
)

// TestDrainNote: the lags come first (a terminal's width cuts the note from
// the end), in name order, then the broker's count and the batches.
func TestDrainNote(t *testing.T) {
	st := observe.Status{Topics: map[string]int64{DefaultTopic: 20_400},
		Queries: map[string]observe.QueryStatus{"silver": {Batch: 39, Lag: 1500}, "bronze": {Batch: 41, Lag: 0}}}
	want := "bronze lag 0, silver lag 1,500; broker 20,400 of 20,500; batches bronze 41, silver 39"
	if got := drainNote(st, 20_500); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
