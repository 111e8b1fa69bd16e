package appliance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/pprof"
	"sync"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/internal/diskbudget"
	"lakehouse/internal/fault"
	"lakehouse/internal/health"
	"lakehouse/internal/httpbound"
	"lakehouse/internal/telemetry"
	"lakehouse/marts"
	"lakehouse/stream"
	"lakehouse/table"
)

// Appliance is the running appliance: broker, lake and the goroutines that
// move data between them.
type Appliance struct {
	cfg  Config
	log  *slog.Logger
	db   broker.Log
	held *broker.HeldCounter // the records each topic holds (Kafka's offsets skip)
	lake *table.Lake         // nil for --role ingest

	tel     *telemetry.Telemetry
	health  *health.Checker
	disk    *diskbudget.Budget
	notify  notifier
	release *releaser // hands the heap back after a refresh or compaction

	mu         sync.Mutex
	httpURL    string             // base URL of the HTTP surface once it listens
	httpConns  *httpbound.Limiter // its connections (nil before)
	localConns *httpbound.Limiter // the local endpoint's connections (nil before)
	queries    map[string]*stream.Query
	ingest     *ingest.Ingester
	marts      *marts.Marts
}

// Open opens the broker and the lake f names (creating them the first
// time) and ensures the topics and tables exist. Run starts the
// appliance; Close releases both stores.
// log is the appliance's logger; a telemetry.RingHandler in it also keeps
// the warnings the dashboard shows.
func Open(ctx context.Context, f Config, log *slog.Logger) (*Appliance, error) {
	// Both stores are opened (and checked) before either is written to, so
	// a damaged one is refused with nothing changed.
	db, err := f.OpenBroker(ctx, broker.Options{DiskReserve: f.DiskReserve, Compress: true}, f.Runs(RoleIngest) && !f.NoIngest)
	if err != nil {
		return nil, err
	}
	var lake *table.Lake
	if f.NeedsLake() {
		tcfg := f.TableConfig(f.Warehouse)
		tcfg.TakeOverWarehouse = f.TakeOverWarehouse
		if lake, err = table.Open(ctx, tcfg); err != nil {
			db.Close()
			return nil, err // says "open lake"
		}
		if from := lake.MovedFrom(); from != "" {
			log.Warn("data directory copied or moved: the table metadata names the warehouse it was created in; every file is read and written under this one, never there",
				"created_in", from, "warehouse", lake.Warehouse())
		}
	}
	closeAll := func() {
		if lake != nil {
			lake.Close()
		}
		db.Close()
	}
	for _, t := range []struct {
		name string
		n    int
	}{{ingest.DefaultTopic, f.Partitions}, {ingest.DefaultDLQTopic, 1}} {
		if err := db.CreateTopic(ctx, t.name, t.n); err != nil {
			closeAll()
			return nil, err // says "create topic" and which
		}
	}
	if lake != nil {
		if err := lake.EnsureTables(ctx); err != nil {
			closeAll()
			return nil, fmt.Errorf("create tables: %w", err)
		}
	}
	tel := telemetry.New()
	if rh, ok := log.Handler().(*telemetry.RingHandler); ok {
		tel.Logs = rh.Ring
	}
	rules := health.DefaultRules
	if f.Health.Every > 0 {
		rules = f.Health
	}
	return &Appliance{cfg: f, log: log, db: db, held: &broker.HeldCounter{Log: db}, lake: lake, release: newReleaser(f.FreeOSMemory), queries: map[string]*stream.Query{},
		tel: tel, health: health.New(rules, log), notify: notifier{log: log},
		disk: diskbudget.New(f.Data, f.Warehouse, f.DiskReserve)}, nil
}

// Close closes the lake and the broker (after Run has returned).
func (a *Appliance) Close() error {
	var err error
	if a.lake != nil {
		err = a.lake.Close()
	}
	return errors.Join(err, a.db.Close())
}

// Run starts every component and waits until ctx is done or one of them
// fails; then it stops the others and returns the first error.
func (a *Appliance) Run(ctx context.Context, stderr io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	start := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The label tags CPU profiles (bench --profile) by component.
			pprof.Do(ctx, pprof.Labels("component", name), func(ctx context.Context) {
				if err := fn(ctx); err != nil && ctx.Err() == nil {
					a.log.Error("component failed; stopping the appliance", "component", name, "err", err)
					cancel(fmt.Errorf("%s: %w", name, err))
				}
			})
		}()
	}
	if a.cfg.HTTPAddr != "" {
		stopHTTP, err := a.serveHTTP(ctx, stderr)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	stopLocal, err := a.serveLocal(ctx)
	if err != nil {
		return err
	}
	defer stopLocal()
	// An error after a component started stops the started ones before it
	// returns: the caller closes the broker and the lake next.
	stopAll := func(err error) error {
		cancel(err)
		wg.Wait()
		return err
	}
	if a.cfg.Runs(RoleIngest) && !a.cfg.NoIngest {
		icfg := a.cfg.ingestConfig(a.log)
		if a.cfg.Since != "" {
			t, err := time.Parse(time.RFC3339, a.cfg.Since)
			if err != nil {
				return fmt.Errorf("--since %q: want RFC 3339: %w", a.cfg.Since, err)
			}
			icfg.Since = t
		}
		ing, err := ingest.New(a.db, icfg)
		if err != nil {
			return err
		}
		a.mu.Lock()
		a.ingest = ing
		a.mu.Unlock()
		start("ingest", ing.Run)
	}
	if a.cfg.Runs(RoleStream) {
		if err := a.startStreams(ctx, start); err != nil {
			return stopAll(err)
		}
	}
	if a.cfg.Runs(RoleMarts) {
		if err := a.startMarts(start); err != nil {
			return stopAll(err)
		}
	}
	start("health", a.runHealth)
	go a.notifyReady(ctx)
	<-ctx.Done()
	a.notify.stopping()
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// streamConfig is the configuration of query name, reporting each
// batch to the telemetry.
func (a *Appliance) streamConfig(name string) (stream.Config, error) {
	cfg, err := a.cfg.streamConfig(name, a.log)
	cfg.OnBatch = a.tel.OnBatch(name)
	if name == stream.BronzeQuery && a.cfg.KillAtBronze > 0 {
		cfg.OnBatch = killAtBronze(a.cfg.KillAtBronze, cfg.OnBatch, fault.Kill)
	}
	return cfg, err
}

// Components returns the ingester and the marts scheduler once Run has
// started them (nil before, or when the role runs neither; the HTTP
// surface starts first).
func (a *Appliance) Components() (*ingest.Ingester, *marts.Marts) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ingest, a.marts
}

func (a *Appliance) addQuery(name string, q *stream.Query) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queries[name] = q
}
