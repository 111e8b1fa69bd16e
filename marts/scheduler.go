package marts

import (
	"context"
	"fmt"
	"time"
)

// Job names, as recorded in ops.runs.
const (
	JobRefresh = "refresh" // rebuild the gold marts and run the checks
	JobCheck   = "check"   // run the checks only (Check)
	JobCompact = "compact" // compact the streamed and ops tables
	JobExpire  = "expire"  // expire old snapshots
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

// RunJob runs one job now (JobRefresh, JobCheck, JobCompact or JobExpire)
// and records it in ops.runs.
func (m *Marts) RunJob(ctx context.Context, job string) (Run, error) {
	switch job {
	case JobRefresh:
		_, err := m.Refresh(ctx)
		return m.LastRun(job), err
	case JobCheck:
		_, err := m.Check(ctx)
		return m.LastRun(job), err
	case JobCompact:
		return m.runJob(ctx, job, func(ctx context.Context, _ string) (string, error) { return m.compact(ctx) })
	case JobExpire:
		return m.runJob(ctx, job, func(ctx context.Context, _ string) (string, error) { return m.expire(ctx) })
	}
	return Run{}, fmt.Errorf("run job %q: unknown job", job)
}

// LastRun returns the newest run of job made by this Marts (zero if none).
func (m *Marts) LastRun(job string) Run {
	m.lastMu.Lock()
	defer m.lastMu.Unlock()
	return m.last[job]
}

// runJob runs fn as one serialised, timed, recorded run of job. A failure to
// record is logged and joined to the returned error.
func (m *Marts) runJob(ctx context.Context, job string, fn func(ctx context.Context, runID string) (string, error)) (Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	start := time.Now().UTC()
	r := Run{ID: job + "-" + start.Format("20060102T150405.000000Z"), Job: job, Started: start}
	detail, err := fn(ctx, r.ID)
	r.Duration = time.Since(start)
	r.Detail = detail
	r.Status = StatusOK
	if err != nil {
		r.Status, r.Err = StatusFailed, err.Error()
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

// Run is the scheduler loop: it refreshes the marts (and checks) at once and
// then every RefreshEvery, compacts every CompactEvery and expires snapshots
// every ExpireEvery (the first compaction and expiry one interval after the
// start). Jobs run one at a time on this goroutine, each recorded in ops.runs;
// a failed run is logged, recorded and retried after RetryEvery (or its own
// interval, if shorter). A negative interval disables that job. Run never
// touches the streams: it only reads committed snapshots and commits its own
// snapshots, so a slow or failing run delays nothing but the next run. It
// returns ctx.Err() when ctx is done.
func (m *Marts) Run(ctx context.Context) error {
	type sched struct {
		job   string
		every time.Duration
		next  time.Time
	}
	now := time.Now()
	var jobs []*sched
	for _, j := range []struct {
		job   string
		every time.Duration
		first time.Duration
	}{
		{JobRefresh, m.cfg.RefreshEvery, 0},
		{JobCompact, m.cfg.CompactEvery, m.cfg.CompactEvery},
		{JobExpire, m.cfg.ExpireEvery, m.cfg.ExpireEvery},
	} {
		if j.every > 0 {
			jobs = append(jobs, &sched{j.job, j.every, now.Add(j.first)})
		}
	}
	if len(jobs) == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		due := jobs[0]
		for _, j := range jobs[1:] {
			if j.next.Before(due.next) {
				due = j
			}
		}
		timer.Reset(time.Until(due.next))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		_, err := m.RunJob(ctx, due.job)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := due.every
		if err != nil && m.cfg.RetryEvery < wait {
			wait = m.cfg.RetryEvery
		}
		due.next = time.Now().Add(wait)
	}
}
