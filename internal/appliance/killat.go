package appliance

import (
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"lakehouse/stream"
	"lakehouse/verify"
)

// killAtBronze wraps bronze's batch callback: after the first batch that
// brings the committed offsets to at least n, a timer of a random fraction
// of that batch's duration calls kill (fault.Kill in the appliance, which
// never returns); if the next batch commits first, its callback kills.
func killAtBronze(n int64, next func(stream.Progress), kill func(name string)) func(stream.Progress) {
	armed := false
	return func(p stream.Progress) {
		if next != nil {
			next(p)
		}
		if armed {
			// The timer has not fired within the batch after the arming
			// one (batches can be shorter than the one that armed it):
			// kill now, so the kill lands at most one batch after it.
			kill(verify.KillAtBronzeHook)
			return
		}
		end, err := stream.ParsePartitionOffsets(p.End)
		if err != nil || end.Sum() < n {
			return
		}
		armed = true
		delay := time.Duration(rand.Int64N(int64(p.Total) + 1))
		fmt.Fprintf(os.Stderr, "lakehouse: bronze committed %d offsets (kill at %d): SIGKILL in %s\n", end.Sum(), n, delay)
		time.AfterFunc(delay, func() { kill(verify.KillAtBronzeHook) })
	}
}
