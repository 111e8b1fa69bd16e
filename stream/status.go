package stream

import (
	"context"
	"fmt"
)

// CurrentLag returns how many source units (offsets, snapshots) lie beyond
// the query's last committed batch right now, and that batch's id (-1 when
// the query has committed nothing). It reads the durable commit log, not
// in-memory counters, so it is safe to call from another goroutine (for a
// status endpoint) while the query runs.
func (q *Query) CurrentLag(ctx context.Context) (lag, batch int64, err error) {
	c, ok, err := q.cp.LatestCommit()
	if err != nil {
		return 0, -1, fmt.Errorf("lag of %s: %w", q.cfg.Name, err)
	}
	end := c.Progress.End
	batch = c.Batch
	if !ok {
		batch = -1
		if end, err = q.src.Earliest(ctx); err != nil {
			return 0, -1, fmt.Errorf("lag of %s: %w", q.cfg.Name, err)
		}
	}
	lag, err = q.src.Lag(ctx, end)
	if err != nil {
		return 0, batch, fmt.Errorf("lag of %s: %w", q.cfg.Name, err)
	}
	return lag, batch, nil
}
