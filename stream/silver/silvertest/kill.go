package silvertest

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"lakehouse/internal/crashtest"
)

// Kill describes one kill of a query that runs in a child process.
type Kill struct {
	Dir   string // the data directory the child works in (its setting "dir")
	Table string // the query's sink table
	Query string // the query name: its marker on Table shows progress
	Role  string // the child's role (crashtest)
	// Hook is the fault hook that must kill the child; "" kills it at a
	// random point after a few batches instead.
	Hook string
	// Skip returns the hits of Hook to let pass, given the query's marker
	// batch before the kill (-1: none).
	Skip      func(before int64) int
	LastBatch int64  // the batch that completes the scenario
	Seed      uint64 // varies the random kills between queries
}

// KillOnce runs one child and kills it, by k.Hook or at random. A kill that
// proves nothing (the query was already complete, the hook never fired or
// fired before anything was committed, no random kill landed mid-stream)
// fails t as inconclusive.
func KillOnce(t *testing.T, k Kill) {
	t.Helper()
	marker := func() int64 { return MarkerBatch(t, k.Dir, k.Table, k.Query) }
	before := marker()
	if before >= k.LastBatch {
		t.Fatalf("inconclusive: %s already complete (batch %d) before the kill", k.Query, before)
	}
	if k.Hook != "" {
		c := crashtest.Start(t, k.Role, "dir", k.Dir, "hook", k.Hook, "skip", strconv.Itoa(k.Skip(before)))
		err := c.Wait(t, 2*time.Minute)
		if !crashtest.WasKilled(err) || !c.Fired(k.Hook) {
			t.Fatalf("inconclusive: hook %s did not kill the child (exit %v); output:\n%s",
				k.Hook, err, crashtest.Tail(c.Output(), 40))
		}
		after := marker()
		if after < 0 {
			t.Fatalf("inconclusive: hook %s fired before %s committed anything", k.Hook, k.Query)
		}
		t.Logf("hook %s: %s marker %d -> %d", k.Hook, k.Query, before, after)
		return
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), k.Seed))
	for attempt := 0; attempt < 5; attempt++ {
		c := crashtest.Start(t, k.Role, "dir", k.Dir)
		want := 1 + rng.IntN(3)
		deadline := time.Now().Add(time.Minute)
		for strings.Count(c.Output(), `msg="stream batch"`) < want && time.Now().Before(deadline) {
			if c.Exited() {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		killed := c.Kill(t)
		after := marker()
		if killed && after > before && after < k.LastBatch {
			t.Logf("random kill after %d batches: %s marker %d -> %d", want, k.Query, before, after)
			return
		}
		t.Logf("attempt %d inconclusive: killed %v, marker %d -> %d", attempt, killed, before, after)
		before = after
		if before >= k.LastBatch {
			break
		}
	}
	t.Fatalf("inconclusive: no random kill landed mid-stream")
}
