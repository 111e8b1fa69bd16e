package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestPercent: the floor raises GOGC only while what is live is smaller
// than the floor, never above maxPercent; a paced phase halves the base and
// drops the floor; a collector that is off stays off.
func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name        string
		base        int
		floor, live int64
		paced       bool
		want        int
	}{
		{"small live heap: headroom of the floor", 100, 32 * mib, 16 * mib, false, 200},
		{"rounded up", 100, 32 * mib, 20 * mib, false, 160},
		{"live above the floor: the base", 100, 32 * mib, 64 * mib, false, 100},
		{"a higher base wins", 300, 32 * mib, 16 * mib, false, 300},
		{"nearly empty heap: bounded", 100, 32 * mib, 1 * mib, false, maxPercent},
		{"no collection yet", 100, 32 * mib, 0, false, 100},
		{"no floor", 100, 0, 16 * mib, false, 100},
		{"paced: half the base, no floor", 100, 32 * mib, 16 * mib, true, 50},
		{"paced: at least 10", 10, 32 * mib, 16 * mib, true, 10},
		{"off stays off", -1, 32 * mib, 16 * mib, false, -1},
		{"off stays off when paced", -1, 32 * mib, 16 * mib, true, -1},
	} {
		if got := Percent(c.base, c.floor, c.live, c.paced); got != c.want {
			t.Errorf("%s: Percent(%d, %d, %d, %v) = %d, want %d", c.name, c.base, c.floor, c.live, c.paced, got, c.want)
		}
	}
}

// TestPaceWithoutStart: without Start, paced phases halve the GOGC the
// first finds, the last to end restores it, and off stays off.
func TestPaceWithoutStart(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(200))
	a := Pace()
	if got := Current(); got != 100 {
		t.Fatalf("GOGC during a merge: got %d, want 100 (half of 200)", got)
	}
	b := Pace()
	if got := Current(); got != 100 {
		t.Fatalf("GOGC during two merges: got %d, want 100", got)
	}
	a()
	a() // a second call of the same restore counts once
	if got := Current(); got != 100 {
		t.Fatalf("GOGC with one merge still running: got %d, want 100", got)
	}
	b()
	if got := Current(); got != 200 {
		t.Fatalf("GOGC after the merges: got %d, want 200", got)
	}

	debug.SetGCPercent(-1)
	c := Pace()
	if got := Current(); got != -1 {
		t.Fatalf("GOGC=off during a merge: got %d, want off (-1)", got)
	}
	c()
	if got := Current(); got != -1 {
		t.Fatalf("GOGC=off after a merge: got %d, want off (-1)", got)
	}
}

// live keeps memory reachable across collections.
var live [][]byte

// TestStartFollowsCollections: after Start, every collection re-applies the
// rules to what it left live: a small live heap gets the floor's GOGC, a
// live heap above the floor the base, and a paced phase half the base.
func TestStartFollowsCollections(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer stop()
	const floor = 64 << 20
	Start(100, floor)
	waitApplied := func(what string, want func(int) bool) {
		t.Helper()
		for range 50 {
			runtime.GC()
			runtime.Gosched()
			if want(Current()) {
				return
			}
		}
		t.Fatalf("%s: GOGC %d after 50 collections", what, Current())
	}
	waitApplied("small live heap", func(p int) bool { return p > 100 })

	// Only a collection re-applies the rules from here: the hook works.
	for range 20 {
		live = append(live, make([]byte, 8<<20)) // 160 MiB: above the floor
	}
	waitApplied("live heap above the floor", func(p int) bool { return p == 100 })

	done := Pace()
	waitApplied("paced", func(p int) bool { return p == 50 })
	done()
	waitApplied("after the paced phase", func(p int) bool { return p == 100 })

	live = nil
	waitApplied("small again", func(p int) bool { return p > 100 })
}
