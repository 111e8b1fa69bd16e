package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"lakehouse/table"
)

// readRuns reads the rows of ops.runs a process that started at started
// recorded, through `query` (the ops tables are small; their exactness is
// not what is measured).
func readRuns(ctx context.Context, cfg HistoryConfig, lake string, started time.Time, logPath string) ([]OpsRun, error) {
	sql := fmt.Sprintf(`SELECT job, epoch_ms(started) AS started_ms, duration_ms, status, coalesce(error, '') AS error
FROM ops.runs WHERE epoch_ms(started) >= %d ORDER BY started`, started.UnixMilli())
	run, out := runChild(ctx, cfg.Launch, logPath, "query", "--data", lake, "--format", "json", sql)
	if run.ExitCode != 0 || run.Err != "" {
		return nil, fmt.Errorf("query exit %d %s: %s", run.ExitCode, run.Err, oneLine(run.Output, 3))
	}
	var rows []struct {
		Job       string `json:"job"`
		StartedMs int64  `json:"started_ms"`
		Duration  int64  `json:"duration_ms"`
		Status    string `json:"status"`
		Error     string `json:"error"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("ops.runs: %w", err)
	}
	var runs []OpsRun
	for _, r := range rows {
		runs = append(runs, OpsRun{Job: r.Job, StartS: time.UnixMilli(r.StartedMs).Sub(started).Seconds(),
			Seconds: float64(r.Duration) / 1000, Status: r.Status, Error: r.Error})
	}
	return runs, nil
}

// checksSeconds is how long the checks of run took: from the newest gold
// mart snapshot committed between the refresh's start and its first
// check's end (the marts are written before the checks run) to its last
// check's end. The snapshots are read from the warehouse's metadata files;
// -1 when none is found (expired, or no gold table).
func checksSeconds(lake string, run *RefreshRun, started time.Time) float64 {
	if len(run.Checks) == 0 {
		return -1
	}
	from := started.Add(time.Duration(run.StartS * float64(time.Second)))
	firstEnd := from.Add(time.Duration(run.Checks[0].EndS * float64(time.Second)))
	lastEnd := from.Add(time.Duration(run.Checks[len(run.Checks)-1].EndS * float64(time.Second)))
	obs := table.Observer{Dir: filepath.Join(lake, "warehouse")}
	idents, err := obs.Tables()
	if err != nil {
		return -1
	}
	var goldEnd time.Time
	for _, id := range idents {
		if !strings.HasPrefix(id, "gold.") {
			continue
		}
		v, err := obs.Table(context.Background(), id)
		if err != nil {
			continue
		}
		for _, s := range v.Snapshots {
			at := time.UnixMilli(s.TimestampMs)
			if !at.Before(from.Add(-time.Second)) && !at.After(firstEnd) && at.After(goldEnd) {
				goldEnd = at
			}
		}
	}
	if goldEnd.IsZero() {
		return -1
	}
	return lastEnd.Sub(goldEnd).Seconds()
}
