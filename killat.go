package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"lakehouse/stream"
	"lakehouse/verify"
)

// envKillAtBronze makes the process SIGKILL itself once bronze has
// committed at least that many offsets: prove sets it for its children.
// A parent that polls /status and sends the kill itself cannot land it
// mid-backlog: bronze drains a capped batch of 500 in 10 to 20 ms, faster
// than a poll answers on a loaded machine (kills overshot the whole
// backlog). The kill is taken after a random delay of up to one batch's
// duration, so it lands at a random moment of the batches that follow
// (planning, writing Parquet, committing), never only between them.
const envKillAtBronze = verify.KillAtBronzeEnv

// killAtFromEnv returns the committed-offset count LAKEHOUSE_KILL_AT_BRONZE
// names (0: unset).
func killAtFromEnv() (int64, error) {
	v := os.Getenv(envKillAtBronze)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a count of committed bronze offsets, 1 or more: %w", envKillAtBronze, v, errUsage)
	}
	return n, nil
}

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
