package appliance

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"lakehouse/marts"
	"lakehouse/stream"
	"lakehouse/stream/lakeio"
	"lakehouse/stream/sessions"
	"lakehouse/stream/silver"
)

// startStreams starts the stream queries: bronze and the dead-letter
// table from the broker, then what reads bronze's commits: silver (parse,
// dedup within the watermark) and sessions; and the embedded broker's
// retention, which never trims what they have not landed.
func (a *Appliance) startStreams(ctx context.Context, start func(string, func(context.Context) error)) error {
	bcfg, err := a.streamConfig(stream.BronzeQuery)
	if err != nil {
		return err
	}
	bronze, err := stream.NewBronze(a.db, a.lake, bcfg)
	if err != nil {
		return err
	}
	a.addQuery(stream.BronzeQuery, bronze)
	start("bronze", bronze.Run)
	dcfg, err := a.streamConfig(stream.DLQQuery)
	if err != nil {
		return err
	}
	dlq, err := stream.NewDLQ(a.db, a.lake, dcfg)
	if err != nil {
		return err
	}
	a.addQuery(stream.DLQQuery, dlq)
	start("dlq", dlq.Run)
	a.startRetention(start)

	scfg, err := a.streamConfig(silver.QueryName)
	if err != nil {
		return err
	}
	sq, _, err := silver.NewQuery(a.lake, a.cfg.downstream(scfg), silver.Config{WatermarkDelay: a.cfg.Watermark,
		MaxEventAhead: a.cfg.MaxEventAhead, Logger: a.log})
	if err != nil {
		return err
	}
	a.addQuery(silver.QueryName, sq)
	start(silver.QueryName, sq.Run)

	ecfg, err := a.streamConfig(sessions.QueryName)
	if err != nil {
		return err
	}
	ecfg = a.cfg.downstream(ecfg)
	if a.cfg.SessionsTrigger > 0 {
		ecfg.Trigger = a.cfg.SessionsTrigger
	}
	eq, _, err := sessions.NewQuery(a.lake, ecfg, sessions.Config{SessionGap: a.cfg.SessionGap,
		WatermarkDelay: a.cfg.Watermark, MaxSessionLength: a.cfg.SessionMax})
	if err != nil {
		return err
	}
	a.addQuery(sessions.QueryName, eq)
	start(sessions.QueryName, eq.Run)
	return nil
}

// startMarts starts the marts scheduler: gold marts, asset checks and
// table maintenance.
func (a *Appliance) startMarts(start func(string, func(context.Context) error)) error {
	var models []marts.Model
	var refused []error
	if a.cfg.Models != "" {
		var err error
		if models, refused, err = marts.LoadModels(a.cfg.Models); err != nil {
			return err
		}
		a.log.Info("marts: models read", "dir", a.cfg.Models, "models", len(models), "refused", len(refused))
	}
	refresh := a.cfg.Refresh
	if refresh <= 0 {
		refresh = -1 // marts and checks off; compaction and expiry still run
	}
	m := marts.New(a.lake, a.db, marts.Config{
		RefreshEvery:    refresh,
		MaintainEvery:   a.cfg.MaintainEvery,
		OpsRetention:    a.cfg.OpsRetention,
		CompactEvery:    a.cfg.CompactEvery,
		MaxSnapshots:    a.cfg.MaxSnapshots,
		KeepSnapshots:   a.cfg.KeepSnapshots,
		Protect:         a.protect,
		DuckTempDir:     filepath.Join(a.cfg.Data, "tmp", "duckdb"),
		DuckMemoryLimit: a.cfg.MartsMemory,
		Models:          models,
		RefusedModels:   refused,
		Logger:          a.log,
		OnRun:           a.release.afterJob,
	})
	a.mu.Lock()
	a.marts = m
	a.mu.Unlock()
	start("marts", m.Run)
	return nil
}

// protect returns the snapshot of ident that the query reading it will
// start its next batch from (lakeio.Protect over the readers silver and
// sessions declare), or the first one of a table holdHistory names (the
// bench). Expiry keeps it and everything newer.
func (a *Appliance) protect(ctx context.Context, ident string) (int64, error) {
	if slices.Contains(a.cfg.HoldHistory, ident) {
		snaps, err := a.lake.AppendsAfter(ctx, ident, 0)
		if err != nil {
			return 0, fmt.Errorf("hold %s: %w", ident, err)
		}
		if len(snaps) == 0 {
			return 0, fmt.Errorf("hold %s: %w", ident, marts.ErrNotConsumed)
		}
		return snaps[0].ID, nil
	}
	snap, err := lakeio.Protect(ctx, a.lake, []lakeio.Reader{silver.Reads, sessions.Reads}, ident)
	if errors.Is(err, lakeio.ErrNotConsumed) {
		return 0, fmt.Errorf("%w: %w", marts.ErrNotConsumed, err)
	}
	return snap, err
}
