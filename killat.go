package main

import (
	"fmt"
	"os"
	"strconv"

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
