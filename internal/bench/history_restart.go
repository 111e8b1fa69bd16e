package bench

import (
	"context"
	"fmt"
	"lakehouse/internal/observe"
	"strings"
	"time"
)

// RestartResult is the appliance restarted on the lake as the service runs
// (`run --no-ingest`), measured from outside until it is ready with every
// check passing or the wait ends. Times are seconds since the process
// started; -1 is "did not happen within the wait".
type RestartResult struct {
	Args        []string `json:"args"`
	HTTPSeconds float64  `json:"http_s"` // the HTTP surface announced
	// ReadyzSeconds is the first /readyz 200, which the appliance may
	// answer before any check ran; ReadySeconds is /readyz 200 with a
	// refresh done and every check of it passing.
	ReadyzSeconds float64 `json:"readyz_200_s"`
	ReadySeconds  float64 `json:"ready_s"`
	WaitedSeconds float64 `json:"waited_s"` // when the wait ended (ready, or the timeout)
	// NotReady are /readyz's reasons when the wait ended without ready.
	NotReady []string `json:"not_ready,omitempty"`
	// From the start to the end of the wait: the kernel's VmHWM (file-backed
	// pages included), the largest sampled RssAnon and RssFile, CPU seconds.
	HWMToReady  int64   `json:"hwm_to_ready_bytes"`
	AnonToReady int64   `json:"peak_anon_to_ready_bytes"`
	FileToReady int64   `json:"peak_file_to_ready_bytes"`
	CPUToReady  float64 `json:"cpu_to_ready_s"`
	// FirstRefresh is the process's first marts refresh (nil: none ended
	// within the wait); the memory figures are over it: VmHWM at its end,
	// sampled peaks from its start to its end.
	FirstRefresh     *RefreshRun `json:"first_refresh,omitempty"`
	HWMFirstRefresh  int64       `json:"hwm_first_refresh_bytes"`
	AnonFirstRefresh int64       `json:"peak_anon_first_refresh_bytes"`
	FileFirstRefresh int64       `json:"peak_file_first_refresh_bytes"`
	Refreshes        int         `json:"refreshes"` // refreshes seen ending within the wait
	// Runs are the jobs ops.runs recorded from this process (read after it
	// stopped).
	Runs        []OpsRun `json:"runs,omitempty"`
	StopSeconds float64  `json:"stop_s"`
	Err         string   `json:"error,omitempty"`
}

// RefreshRun is one marts refresh as /api/status reported it.
type RefreshRun struct {
	RunID   string  `json:"run_id"`
	StartS  float64 `json:"start_s"` // since the process started
	Seconds float64 `json:"seconds"`
	Scope   string  `json:"scope"`
	Passed  bool    `json:"passed"` // every check passed
	// ChecksSeconds is from the last gold mart's commit to the last check's
	// end (the checks run after the marts are written); -1: not known.
	ChecksSeconds float64    `json:"checks_s"`
	Checks        []CheckRun `json:"checks"`
}

// CheckRun is one asset check of a refresh.
type CheckRun struct {
	Name    string  `json:"name"`
	Passed  bool    `json:"passed"`
	EndS    float64 `json:"end_s"` // since the refresh started
	Message string  `json:"message,omitempty"`
}

// OpsRun is one row of ops.runs.
type OpsRun struct {
	Job     string  `json:"job"`
	StartS  float64 `json:"start_s"` // since the process started
	Seconds float64 `json:"seconds"`
	Status  string  `json:"status"`
	Error   string  `json:"error,omitempty"`
}

// refreshRun turns the observation's refresh into a RefreshRun (nil: none yet).
func refreshRun(o observe.Observation, started time.Time) *RefreshRun {
	r := o.Refresh
	if r == nil || r.RunID == "" {
		return nil
	}
	out := &RefreshRun{RunID: r.RunID, StartS: r.Started.Sub(started).Seconds(), Seconds: r.DurationS, Scope: r.Scope,
		Passed: len(r.Checks) > 0, ChecksSeconds: -1}
	for _, c := range r.Checks {
		out.Checks = append(out.Checks, CheckRun{Name: c.Name, Passed: c.Passed, EndS: c.CheckedAt.Sub(r.Started).Seconds(), Message: c.Message})
		out.Passed = out.Passed && c.Passed
	}
	return out
}

// readyz is /readyz?format=json.
type readyz struct {
	Ready   bool     `json:"ready"`
	Reasons []string `json:"reasons"`
}

// statusEvery spaces the reads of /api/status, which gathers the whole
// observation (every table's metadata, the broker's counts): often enough
// to see each refresh end, rarely enough not to load the process measured.
const statusEvery = 2 * time.Second

// measureRestart starts `run --no-ingest` on lake and waits, up to
// cfg.ReadyTimeout, for /readyz 200 with every check of a refresh passing.
func measureRestart(ctx context.Context, cfg HistoryConfig, lake, logPath string, say func(string, ...any)) RestartResult {
	res := RestartResult{Args: []string{"run", "--data", lake, "--no-ingest", "--http", "127.0.0.1:0"},
		ReadyzSeconds: -1, ReadySeconds: -1}
	say("restart: lakehouse %s", strings.Join(res.Args, " "))
	svc, err := startService(ctx, cfg.Launch(res.Args...), logPath, cfg.ReadyTimeout)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	res.HTTPSeconds = svc.elapsed()
	deadline := svc.Started.Add(cfg.ReadyTimeout)
	var lastStatus time.Time
	var latest *RefreshRun
	var last readyz
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if svc.exited() {
			res.Err = fmt.Sprintf("the appliance exited during the wait (%v); see %s", svc.Wait(), logPath)
			break
		}
		code, err := svc.getJSON(ctx, "/readyz?format=json", &last)
		if err == nil && code == 200 && res.ReadyzSeconds < 0 {
			res.ReadyzSeconds = svc.elapsed()
		}
		// Once /readyz says 200, what is missing is a passing refresh: look
		// sooner, but not at every tick.
		soon := code == 200 && (latest == nil || !latest.Passed) && time.Since(lastStatus) >= statusEvery/4
		if time.Since(lastStatus) >= statusEvery || soon {
			lastStatus = time.Now()
			var st observe.Observation
			if _, err := svc.getJSON(ctx, observe.ObservationPath, &st); err == nil {
				if r := refreshRun(st, svc.Started); r != nil && (latest == nil || r.RunID != latest.RunID) {
					latest = r
					res.Refreshes++
					if res.FirstRefresh == nil {
						m := svc.now()
						res.FirstRefresh = r
						res.HWMFirstRefresh = m.HWM
						res.AnonFirstRefresh, res.FileFirstRefresh = svc.peaks(r.StartS, r.StartS+r.Seconds)
						say("restart: first refresh ended at %.1f s: %.1f s, %s, checks passed %v", r.StartS+r.Seconds, r.Seconds, r.Scope, r.Passed)
					}
				}
			}
		}
		if code == 200 && latest != nil && latest.Passed {
			res.ReadySeconds = svc.elapsed()
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			res.NotReady = last.Reasons
			if latest == nil {
				res.NotReady = append(res.NotReady, "no marts refresh ended")
			}
			break
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	m := svc.now()
	res.WaitedSeconds = m.T
	res.HWMToReady, res.CPUToReady = m.HWM, m.CPU
	res.AnonToReady, res.FileToReady = svc.peaks(0, m.T)
	if res.ReadySeconds >= 0 {
		say("restart: ready with every check passing at %.1f s; VmHWM %s", res.ReadySeconds, fmtBytes(res.HWMToReady))
	} else {
		say("restart: NOT ready with every check passing within %s: %s; VmHWM %s", cfg.ReadyTimeout, strings.Join(res.NotReady, "; "), fmtBytes(res.HWMToReady))
	}
	stopS, err := svc.stop(historyStopGrace)
	res.StopSeconds = stopS
	if err != nil && res.Err == "" {
		res.Err = "stop: " + err.Error()
	}
	if res.FirstRefresh != nil {
		res.FirstRefresh.ChecksSeconds = checksSeconds(lake, res.FirstRefresh, svc.Started)
	}
	runs, err := readRuns(ctx, cfg, lake, svc.Started, logPath)
	res.Runs = runs
	if err != nil && res.Err == "" {
		res.Err = "read ops.runs: " + err.Error()
	}
	return res
}
