package appliance

import (
	"context"
	"time"
)

// runHealth evaluates readiness every rules.Every until ctx is done, and
// feeds the systemd watchdog while the pipeline progresses.
func (a *Appliance) runHealth(ctx context.Context) error {
	t := time.NewTicker(a.health.Rules.Every)
	defer t.Stop()
	for {
		st := a.health.Evaluate(a.Observe(ctx), a.tel.Query)
		if st.Progressing {
			a.notify.watchdog()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
