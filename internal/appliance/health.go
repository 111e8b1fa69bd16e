package appliance

import (
	"context"
	"time"
)

// runHealth evaluates readiness every rules.Every until ctx is done, and
// feeds the systemd watchdog while the pipeline progresses.
func (p *Appliance) runHealth(ctx context.Context) error {
	t := time.NewTicker(p.health.Rules.Every)
	defer t.Stop()
	for {
		st := p.health.Evaluate(p.Observe(ctx), p.tel.Query)
		if st.Progressing {
			p.notify.watchdog()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
