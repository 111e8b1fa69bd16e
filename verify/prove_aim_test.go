package verify

import (
	"math/rand"
	"testing"
)

// TestKillsFitTheBacklog: with the batch cap sizeBatches picks, every kill
// aimKill aims lands strictly inside the backlog and past the kill before
// it, even when each lands as late as a kill can (two batches past its
// target) or as early (right at it), for many kill counts, backlogs and
// seeds; and a cap set by hand too large for the kills is refused.
func TestKillsFitTheBacklog(t *testing.T) {
	for _, backlog := range []int64{100, 800, 1600, 4400, 20400} {
		for kills := 1; kills <= 6; kills++ {
			for _, late := range []bool{false, true} {
				for seed := int64(1); seed <= 50; seed++ {
					cfg := ProveConfig{Kills: kills}
					if err := sizeBatches(&cfg, backlog); err != nil {
						t.Fatalf("backlog %d, %d kills: %v", backlog, kills, err)
					}
					b := int64(cfg.MaxOffsetsPerTrigger)
					if b < 1 || b > DefaultProveMaxOffset {
						t.Fatalf("backlog %d, %d kills: batch cap %d", backlog, kills, b)
					}
					if backlog <= int64(2*kills+1)*b {
						continue // fewer events than 2K+2 batches of one: nothing can be aimed
					}
					res := &ProveResult{Backlog: backlog}
					rng := rand.New(rand.NewSource(seed))
					prev := int64(0)
					for k := range kills {
						target := aimKill(cfg, res, k, rng)
						if target <= prev {
							t.Fatalf("backlog %d (batch %d), kill %d of %d: target %d not past %d", backlog, b, k+1, kills, target, prev)
						}
						// The batch that reaches the target ends before
						// target+b; the kill lands in or after the next.
						rows := target
						if late {
							rows = target - 1 + 2*b
						}
						if rows <= 0 || rows >= backlog {
							t.Fatalf("backlog %d (batch %d), kill %d of %d: target %d lands at %d", backlog, b, k+1, kills, target, rows)
						}
						res.KilledAt = append(res.KilledAt, rows)
						prev = rows
					}
				}
			}
		}
	}
	cfg := ProveConfig{Kills: 2, MaxOffsetsPerTrigger: 500}
	if err := sizeBatches(&cfg, 1600); err == nil {
		t.Fatal("2 kills with batches of 500 in a backlog of 1,600 accepted")
	}
}
