package appliance

import (
	"context"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/internal/diskbudget"
	"lakehouse/internal/httpbound"
	"lakehouse/internal/observe"
	"lakehouse/internal/telemetry"
	"lakehouse/marts"
	"lakehouse/stream"
	"lakehouse/table"
)

// Config is the configuration the appliance was opened with.
func (p *Appliance) Config() Config { return p.cfg }

// Lake is the appliance's lake (nil for RoleIngest, which opens none).
func (p *Appliance) Lake() *table.Lake { return p.lake }

// Broker is the appliance's broker.
func (p *Appliance) Broker() broker.Log { return p.db }

// Status is the brief observation's projection that /status serves: the
// topics' counts and the queries' lags (only the named queries, if any).
func (p *Appliance) Status(ctx context.Context, queries ...string) observe.Status {
	return p.observeBrief(ctx, queries...).Status()
}

// Readiness is the last readiness verdict (what /readyz serves).
func (p *Appliance) Readiness() observe.Health { return p.health.State() }

// Telemetry is what the appliance counts about its own batches,
// freshness, ingest and warnings since it started.
func (p *Appliance) Telemetry() *telemetry.Telemetry { return p.tel }

// Disk is the data directory's disk budget.
func (p *Appliance) Disk() *diskbudget.Budget { return p.disk }

// Components returns the ingester and the marts scheduler once Run has
// started them (nil before, or when the role runs neither).
func (p *Appliance) Components() (*ingest.Ingester, *marts.Marts) { return p.components() }

// Query is the stream query of that name once Run has started it (nil
// before, or when the role runs no streams).
func (p *Appliance) Query(name string) *stream.Query {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queries[name]
}

// Conns are the connection limiters of the HTTP surface and of the local
// endpoint, once each listens (nil before).
func (p *Appliance) Conns() (public, local *httpbound.Limiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.httpConns, p.localConns
}
