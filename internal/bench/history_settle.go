package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"lakehouse/table"
)

// The demo gathers days of history in minutes and stops: the compaction a
// service runs every two minutes as it goes has not caught up (at 7 days
// the demo leaves some 350 small bronze files), and the first start after
// it compacts every table before its first refresh, more than a minute and
// a half of a restart that a service running for weeks never sees. A
// build therefore ends by settling: one start of the appliance without
// ingest, until it has compacted and refreshed; the restart measured is
// the next one.

// settleTimeout bounds the settling start: compaction of every table of a
// long history on a cold cache.
const settleTimeout = 30 * time.Minute

// settleRefresh is the settling start's --refresh (or the steady phase's,
// when shorter): soon enough that a refresh follows the compaction without
// waiting the default 5 minutes.
const settleRefresh = 20 * time.Second

// SettleRecord is the settling start of a build.
type SettleRecord struct {
	Args    []string `json:"args"`
	Seconds float64  `json:"seconds"`
	// Jobs are the jobs it recorded in ops.runs: "compact 102.3 s".
	Jobs []string `json:"jobs"`
}

// opsRun is a run of ops.runs as its snapshot shows it: the run id
// (<job>-<start>) and the commit time.
type opsRun struct {
	job    string
	start  time.Time
	commit time.Time
}

// runIDTime is the start time in a run id (marts' format).
const runIDTime = "20060102T150405.000000Z"

// recordedRuns reads the runs ops.runs holds from the warehouse's metadata
// files (no catalog: the appliance holds it), from the id each run's
// snapshot carries.
func recordedRuns(ctx context.Context, lake string) ([]opsRun, error) {
	v, err := table.Observer{Dir: filepath.Join(lake, "warehouse")}.Table(ctx, "ops.runs")
	if err != nil {
		return nil, err
	}
	var out []opsRun
	for _, s := range v.Snapshots {
		id := s.Summary[table.SummaryOffsets]
		if len(id) <= len(runIDTime)+1 {
			continue
		}
		start, err := time.Parse(runIDTime, id[len(id)-len(runIDTime):])
		if err != nil {
			continue
		}
		out = append(out, opsRun{job: id[:len(id)-len(runIDTime)-1], start: start, commit: time.UnixMilli(s.TimestampMs)})
	}
	return out, nil
}

// settle starts the appliance on the lake in dir without ingest and stops
// it once two refreshes have been recorded, the last one started after
// every compaction it recorded.
func settle(ctx context.Context, cfg HistoryConfig, dir, logPath string, say func(string, ...any)) (SettleRecord, error) {
	rec := SettleRecord{Args: []string{"run", "--data", dir, "--no-ingest", "--http", "127.0.0.1:0", "--refresh", min(settleRefresh, cfg.Refresh).String()}}
	say("settling: lakehouse %s, until it has compacted and refreshed twice", strings.Join(rec.Args, " "))
	svc, err := startService(ctx, cfg.Launch(rec.Args...), logPath, settleTimeout)
	if err != nil {
		return rec, err
	}
	started := svc.Started.Add(-time.Second) // the run ids' clock is the appliance's; allow for rounding
	deadline := svc.Started.Add(settleTimeout)
	var mine []opsRun
	var waitErr error
	for {
		if svc.exited() {
			waitErr = fmt.Errorf("the appliance exited while settling (%v); see %s", svc.Wait(), logPath)
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			waitErr = fmt.Errorf("not settled within %s; see %s", settleTimeout, logPath)
			break
		}
		runs, _ := recordedRuns(ctx, dir)
		mine = mine[:0]
		var refreshes []opsRun
		var lastCompact time.Time
		for _, r := range runs {
			if r.start.Before(started) {
				continue
			}
			mine = append(mine, r)
			switch r.job {
			case "refresh":
				refreshes = append(refreshes, r)
			case "compact":
				if r.commit.After(lastCompact) {
					lastCompact = r.commit
				}
			}
		}
		if len(refreshes) >= 2 && refreshes[len(refreshes)-1].start.After(lastCompact) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(statusEvery):
		}
	}
	rec.Seconds = svc.elapsed()
	for _, r := range mine {
		rec.Jobs = append(rec.Jobs, fmt.Sprintf("%s %.1f s", r.job, r.commit.Sub(r.start).Seconds()))
	}
	if _, err := svc.stop(historyStopGrace); err != nil && waitErr == nil {
		waitErr = err
	}
	if waitErr == nil {
		say("settled in %.0f s: %s", rec.Seconds, strings.Join(rec.Jobs, ", "))
	}
	return rec, waitErr
}
