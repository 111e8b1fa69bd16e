package table

import (
	"runtime/debug"
	"testing"
)

// TestPaceGC: merges halve GOGC while any of them runs, the last to end
// restores what the first found, and a collector that is off stays off.
func TestPaceGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(200))
	a := paceGC()
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC during a merge: got %d, want 100 (half of 200)", got)
	}
	b := paceGC()
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC during two merges: got %d, want 100", got)
	}
	a()
	a() // a second call of the same restore counts once
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC with one merge still running: got %d, want 100", got)
	}
	b()
	if got := gogc(); got != 200 {
		t.Fatalf("GOGC after the merges: got %d, want 200", got)
	}

	debug.SetGCPercent(-1)
	c := paceGC()
	if got := gogc(); got != -1 {
		t.Fatalf("GOGC=off during a merge: got %d, want off (-1)", got)
	}
	c()
	if got := gogc(); got != -1 {
		t.Fatalf("GOGC=off after a merge: got %d, want off (-1)", got)
	}
}
