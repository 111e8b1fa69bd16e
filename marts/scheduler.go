package marts

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Job names, as recorded in ops.runs.
const (
	JobRefresh = "refresh" // rebuild the gold marts and run the checks
	JobCheck   = "check"   // run the checks only (Check)
	JobRebuild = "rebuild" // rebuild every unit and count every id and offset (Rebuild)
	JobCompact = "compact" // compact the streamed and ops tables where due
	JobExpire  = "expire"  // expire snapshots of tables over MaxSnapshots
	JobOrphans = "orphans" // delete orphan files where due
	// JobOpsRetention deletes ops rows older than OpsRetention where due.
	JobOpsRetention = "ops-retention"
)

// Run statuses.
const (
	StatusOK     = "ok"
	StatusFailed = "failed"
)

// Run is one recorded job run (a row of ops.runs).
type Run struct {
	ID       string
	Job      string
	Started  time.Time
	Duration time.Duration
	Status   string // StatusOK or StatusFailed
	Err      string // the failure, if any
	Detail   string // what the job did
}

// RunJob runs one job now (JobRefresh, JobCheck, JobRebuild, JobCompact,
// JobExpire or JobOrphans) and records it in ops.runs. The maintenance jobs do what is
// due (as the maintenance loop would) and are recorded only when they did
// something or failed.
func (m *Marts) RunJob(ctx context.Context, job string) (Run, error) {
	switch job {
	case JobRefresh:
		_, err := m.Refresh(ctx)
		return m.LastRun(job), err
	case JobCheck:
		_, err := m.Check(ctx)
		return m.LastRun(job), err
	case JobRebuild:
		_, err := m.Rebuild(ctx)
		return m.LastRun(job), err
	case JobCompact:
		return m.runJob(ctx, job, &m.mu, m.compact)
	case JobExpire:
		return m.runJob(ctx, job, &m.expireMu, m.expire)
	case JobOrphans:
		return m.runJob(ctx, job, &m.expireMu, m.deleteOrphans)
	case JobOpsRetention:
		return m.runJob(ctx, job, &m.expireMu, m.retainOps)
	}
	return Run{}, fmt.Errorf("run job %q: unknown job", job)
}

// LastRun returns the newest recorded run of job made by this Marts (zero
// if none).
func (m *Marts) LastRun(job string) Run {
	m.lastMu.Lock()
	defer m.lastMu.Unlock()
	return m.last[job]
}

// runJob runs fn as one timed run of job holding mu. A run is recorded in ops.runs
// when fn failed, returned a detail (it did something), or job is a refresh
// or check (every one is recorded). A failure to record is logged and joined
// to the returned error.
func (m *Marts) runJob(ctx context.Context, job string, mu *sync.Mutex, fn func(ctx context.Context, runID string) (string, error)) (Run, error) {
	mu.Lock()
	defer mu.Unlock()
	start := time.Now().UTC()
	r := Run{ID: job + "-" + start.Format("20060102T150405.000000Z"), Job: job, Started: start}
	detail, err := fn(ctx, r.ID)
	r.Duration = time.Since(start)
	r.Detail = detail
	r.Status = StatusOK
	if err != nil {
		r.Status, r.Err = StatusFailed, err.Error()
	}
	always := job == JobRefresh || job == JobCheck || job == JobRebuild
	if !always && err == nil && detail == "" {
		return r, nil // nothing was due
	}
	if ctx.Err() == nil {
		if rerr := m.recordRun(ctx, r); rerr != nil {
			m.cfg.Logger.Error("marts: record run", "run", r.ID, "err", rerr)
			if err == nil {
				err = rerr
			}
		}
	}
	if err != nil {
		m.cfg.Logger.Warn("marts: run failed", "job", job, "run", r.ID, "duration", r.Duration, "err", err)
	} else {
		m.cfg.Logger.Info("marts: run ok", "job", job, "run", r.ID, "duration", r.Duration, "detail", detail)
	}
	m.lastMu.Lock()
	if m.last == nil {
		m.last = map[string]Run{}
	}
	m.last[job] = r
	m.lastMu.Unlock()
	if m.cfg.OnRun != nil {
		m.cfg.OnRun(r)
	}
	return r, err
}

// Run runs the three loops of the scheduler until ctx is done: the refresh
// loop rebuilds the marts (and runs the checks) at once and then every
// RefreshEvery, retrying a failed refresh after RetryEvery; the maintenance
// loop looks at every table at once and then every MaintainEvery and
// expires snapshots and deletes orphan files where due (see maintain); the
// compaction loop does the same for compaction every CompactEvery (see
// compact), waiting for a refresh that reads the files. What is due is read from the tables, so
// a restart never resets a schedule. A negative interval disables that
// loop. Run never touches the streams: it only reads committed snapshots
// and commits its own snapshots, so a slow or failing run delays nothing
// but the next run. It returns ctx.Err() when ctx is done.
func (m *Marts) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if m.cfg.RefreshEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.loop(ctx, m.cfg.RefreshEvery, func(ctx context.Context) error {
				_, err := m.Refresh(ctx)
				return err
			})
		}()
	}
	if m.cfg.MaintainEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.loop(ctx, m.cfg.MaintainEvery, m.maintain)
		}()
	}
	if m.cfg.CompactEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.loop(ctx, m.cfg.CompactEvery, m.compactDue)
		}()
	}
	wg.Wait()
	<-ctx.Done()
	return ctx.Err()
}

// loop runs fn at once and then every every (after RetryEvery instead when
// it failed and that is sooner) until ctx is done. Failures are logged and
// recorded by fn's jobs.
func (m *Marts) loop(ctx context.Context, every time.Duration, fn func(context.Context) error) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		wait := every
		if err := fn(ctx); err != nil && m.cfg.RetryEvery < wait {
			wait = m.cfg.RetryEvery
		}
		timer.Reset(wait)
	}
}
