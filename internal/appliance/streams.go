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
func (p *Appliance) startStreams(ctx context.Context, start func(string, func(context.Context) error)) error {
	bcfg, err := p.streamConfig(stream.BronzeQuery)
	if err != nil {
		return err
	}
	bronze, err := stream.NewBronze(p.db, p.lake, bcfg)
	if err != nil {
		return err
	}
	p.addQuery(stream.BronzeQuery, bronze)
	start("bronze", bronze.Run)
	dcfg, err := p.streamConfig(stream.DLQQuery)
	if err != nil {
		return err
	}
	dlq, err := stream.NewDLQ(p.db, p.lake, dcfg)
	if err != nil {
		return err
	}
	p.addQuery(stream.DLQQuery, dlq)
	start("dlq", dlq.Run)
	p.startRetention(start)

	scfg, err := p.streamConfig(silver.QueryName)
	if err != nil {
		return err
	}
	sq, _, err := silver.NewQuery(p.lake, p.cfg.downstream(scfg), silver.Config{WatermarkDelay: p.cfg.Watermark,
		MaxEventAhead: p.cfg.MaxEventAhead, Logger: p.log})
	if err != nil {
		return err
	}
	p.addQuery(silver.QueryName, sq)
	start(silver.QueryName, sq.Run)

	ecfg, err := p.streamConfig(sessions.QueryName)
	if err != nil {
		return err
	}
	ecfg = p.cfg.downstream(ecfg)
	if p.cfg.SessionsTrigger > 0 {
		ecfg.Trigger = p.cfg.SessionsTrigger
	}
	eq, _, err := sessions.NewQuery(p.lake, ecfg, sessions.Config{SessionGap: p.cfg.SessionGap,
		WatermarkDelay: p.cfg.Watermark, MaxSessionLength: p.cfg.SessionMax})
	if err != nil {
		return err
	}
	p.addQuery(sessions.QueryName, eq)
	start(sessions.QueryName, eq.Run)
	return nil
}

// startMarts starts the marts scheduler: gold marts, asset checks and
// table maintenance.
func (p *Appliance) startMarts(start func(string, func(context.Context) error)) {
	refresh := p.cfg.Refresh
	if refresh <= 0 {
		refresh = -1 // marts and checks off; compaction and expiry still run
	}
	m := marts.New(p.lake, p.db, marts.Config{
		RefreshEvery:    refresh,
		MaintainEvery:   p.cfg.MaintainEvery,
		OpsRetention:    p.cfg.OpsRetention,
		CompactEvery:    p.cfg.CompactEvery,
		MaxSnapshots:    p.cfg.MaxSnapshots,
		KeepSnapshots:   p.cfg.KeepSnapshots,
		Protect:         p.protect,
		DuckTempDir:     filepath.Join(p.cfg.Data, "tmp", "duckdb"),
		DuckMemoryLimit: p.cfg.MartsMemory,
		Logger:          p.log,
		OnRun:           p.release.afterJob,
	})
	p.mu.Lock()
	p.marts = m
	p.mu.Unlock()
	start("marts", m.Run)
}

// protect returns the snapshot of ident that the query reading it will
// start its next batch from (lakeio.Protect over the readers silver and
// sessions declare), or the first one of a table holdHistory names (the
// bench). Expiry keeps it and everything newer.
func (p *Appliance) protect(ctx context.Context, ident string) (int64, error) {
	if slices.Contains(p.cfg.HoldHistory, ident) {
		snaps, err := p.lake.AppendsAfter(ctx, ident, 0)
		if err != nil {
			return 0, fmt.Errorf("hold %s: %w", ident, err)
		}
		if len(snaps) == 0 {
			return 0, fmt.Errorf("hold %s: %w", ident, marts.ErrNotConsumed)
		}
		return snaps[0].ID, nil
	}
	snap, err := lakeio.Protect(ctx, p.lake, []lakeio.Reader{silver.Reads, sessions.Reads}, ident)
	if errors.Is(err, lakeio.ErrNotConsumed) {
		return 0, fmt.Errorf("%w: %w", marts.ErrNotConsumed, err)
	}
	return snap, err
}
