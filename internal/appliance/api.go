package appliance

import (
	"context"

	"lakehouse/broker"
	"lakehouse/internal/diskbudget"
	"lakehouse/internal/httpbound"
	"lakehouse/internal/observe"
	"lakehouse/internal/telemetry"
	"lakehouse/stream"
	"lakehouse/table"
)

// Config is the configuration the appliance was opened with.
func (a *Appliance) Config() Config { return a.cfg }

// Lake is the appliance's lake (nil for RoleIngest, which opens none).
func (a *Appliance) Lake() *table.Lake { return a.lake }

// Broker is the appliance's broker.
func (a *Appliance) Broker() broker.Log { return a.db }

// Status is the brief observation's projection that /status serves: the
// topics' counts and the queries' lags (only the named queries, if any).
func (a *Appliance) Status(ctx context.Context, queries ...string) observe.Status {
	return a.observeBrief(ctx, queries...).Status()
}

// Readiness is the last readiness verdict (what /readyz serves).
func (a *Appliance) Readiness() observe.Health { return a.health.State() }

// Telemetry is what the appliance counts about its own batches,
// freshness, ingest and warnings since it started.
func (a *Appliance) Telemetry() *telemetry.Telemetry { return a.tel }

// Disk is the data directory's disk budget.
func (a *Appliance) Disk() *diskbudget.Budget { return a.disk }

// Query is the stream query of that name once Run has started it (nil
// before, or when the role runs no streams).
func (a *Appliance) Query(name string) *stream.Query {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queries[name]
}

// Conns are the connection limiters of the HTTP surface and of the local
// endpoint, once each listens (nil before).
func (a *Appliance) Conns() (public, local *httpbound.Limiter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.httpConns, a.localConns
}
