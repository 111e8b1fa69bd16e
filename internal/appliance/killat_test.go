package appliance

import (
	"testing"
	"time"

	"lakehouse/stream"
)

// TestKillAtBronze: the kill prove relies on is armed by the first batch
// that brings bronze's committed offsets to the target, fires once, and
// the batch after the arming one kills at once.
func TestKillAtBronze(t *testing.T) {
	kills := make(chan string, 4)
	var seen []int64
	cb := killAtBronze(1000, func(p stream.Progress) { seen = append(seen, p.Batch) }, func(name string) { kills <- name })
	batch := func(n int64, end stream.NextOffsets) {
		cb(stream.Progress{Batch: n, End: end.Offset(), Total: 5 * time.Millisecond})
	}
	batch(0, stream.NextOffsets{0: 300, 1: 200}) // 500: below the target
	select {
	case name := <-kills:
		t.Fatalf("killed (%s) at 500 committed offsets, target 1000", name)
	case <-time.After(50 * time.Millisecond):
	}
	batch(1, stream.NextOffsets{0: 600, 1: 500}) // 1100: arms a timer of up to 5 ms
	select {
	case name := <-kills:
		if name != "kill-at-bronze" {
			t.Fatalf("kill named %q, want kill-at-bronze (prove looks for it)", name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no kill within 5 s of reaching the target")
	}
	// A batch committed after the arming one kills at once (the timer may
	// be longer than the batches after it).
	batch(2, stream.NextOffsets{0: 900, 1: 800})
	select {
	case <-kills:
	default:
		t.Fatal("the batch after the arming one committed without a kill")
	}
	if len(seen) != 3 {
		t.Fatalf("the wrapped callback saw batches %v, want all three", seen)
	}
}
