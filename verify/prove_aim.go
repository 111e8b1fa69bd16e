package verify

import (
	"fmt"
	"math/rand"
)

// A kill lands at most two bronze batches past its target (see proveKill),
// and the last one must leave some of the backlog uncommitted: a target
// keeps three batches after it, so K kills fit a backlog of more than
// 2K+1 batches, and sizeBatches gives them 2K+3.
const batchesPerKill, batchesSpare = 2, 3

// sizeBatches picks bronze's batch cap when none is set, so that the
// backlog holds every kill asked for (a cap larger than a kill's share of
// the backlog left the last kills nothing to land in), and refuses a set
// cap too large for the kills.
func sizeBatches(cfg *ProveConfig, backlog int64) error {
	kills := int64(killCount(*cfg))
	need := batchesPerKill*kills + batchesSpare
	if cfg.MaxOffsetsPerTrigger <= 0 {
		cfg.MaxOffsetsPerTrigger = int(max(1, min(DefaultProveMaxOffset, backlog/need)))
		return nil
	}
	if len(cfg.KillFractions) == 0 && backlog <= (batchesPerKill*kills+1)*int64(cfg.MaxOffsetsPerTrigger) {
		return fmt.Errorf("%d kills need a backlog of more than %d batches, and %d events are %d batches of %d: lower the batch cap (max-offsets-per-trigger) or raise the loops",
			kills, batchesPerKill*kills+1, backlog, backlog/int64(cfg.MaxOffsetsPerTrigger), cfg.MaxOffsetsPerTrigger)
	}
	return nil
}

// aimKill is kill k's target (bronze rows): past where the kill before it
// left bronze, and early enough that each kill after it still has room,
// the last landing before the end of the backlog.
func aimKill(cfg ProveConfig, res *ProveResult, k int, rng *rand.Rand) int64 {
	batch := int64(cfg.MaxOffsetsPerTrigger)
	left := int64(killCount(cfg) - k) // this kill and those after it
	var prev int64
	if n := len(res.KilledAt); n > 0 {
		prev = res.KilledAt[n-1]
	}
	lo := prev + 1
	hi := res.Backlog - batchesSpare*batch - batchesPerKill*batch*(left-1)
	if hi <= lo {
		return lo // too small a backlog (a cap set by hand): the kill check says so
	}
	return lo + rng.Int63n((hi-lo)/left+1)
}

// killFractions are the kill points: cfg.KillFractions, or increasing
// random fractions of the backlog, one per kill.
func killFractions(cfg ProveConfig, rng *rand.Rand) []float64 {
	if len(cfg.KillFractions) > 0 {
		return cfg.KillFractions
	}
	fracs := make([]float64, cfg.Kills)
	for i := range fracs {
		lo := 0.05 + 0.85*float64(i)/float64(cfg.Kills)
		hi := 0.05 + 0.85*float64(i+1)/float64(cfg.Kills)
		fracs[i] = lo + rng.Float64()*(hi-lo)
	}
	return fracs
}

// killCount is the number of kills a run of cfg makes.
func killCount(cfg ProveConfig) int {
	if len(cfg.KillFractions) > 0 {
		return len(cfg.KillFractions)
	}
	return cfg.Kills
}
