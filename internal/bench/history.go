package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The history benchmark: for each history length, a lake built through the
// real pipeline (the binary's own `demo`), then the appliance restarted on
// it as the service runs (`run --no-ingest`, a child process measured from
// outside: /readyz, /api/status, /proc), a handful of questions through
// `query` checked against an independent reading of the tables and the
// broker, `verify`, the disk per component, and a steady-state refresh
// with events arriving at the lake's density. Every figure comes from the
// kernel, the child processes' own surfaces or the files on disk.

// Defaults of a HistoryConfig.
const (
	DefaultHistoryEventsPerDay = 300_000 // a tenth of the real stream
	DefaultHistoryRecording    = 2000    // the demo's --events: one loop of the recording
	DefaultHistoryReadyTimeout = 5 * time.Minute
	DefaultHistoryRefresh      = time.Minute
	DefaultHistorySteady       = 2
	// historyStopGrace bounds the wait for a child to stop after SIGTERM.
	historyStopGrace = 2 * time.Minute
)

// DefaultHistoryDays are the history lengths measured by default.
var DefaultHistoryDays = []float64{1, 7, 28}

// HistoryConfig configures RunHistory. Zero fields take the defaults.
type HistoryConfig struct {
	Days         []float64 // history lengths, in days (fractions allowed)
	EventsPerDay int       // density of the history
	Recording    int       // events in the demo's recording (its --events); loops make up the rest
	// WorkDir holds the built lakes, the copies measured and the children's
	// logs. With Keep, a lake built there by an earlier run with the same
	// parameters is reused (unless Rebuild), and every measurement runs on a
	// copy so the built lake stays as the demo left it; without Keep the
	// lake is measured where it was built and WorkDir is removed after a run
	// that passed.
	WorkDir string
	Keep    bool
	Rebuild bool
	// Lakes are existing lakes to measure instead of building one, by
	// length in days: read only, always measured on a copy.
	Lakes map[float64]string
	// Settle ends each build with one start of the appliance that lets
	// its compaction catch up (history_settle.go), so the restart measured
	// is that of a service that has been running, not the first after the
	// demo.
	Settle bool
	// Cold evicts the measured lake's files from the page cache before the
	// restart (posix_fadvise DONTNEED, only those files), as after a reboot;
	// otherwise the restart finds them as the build or copy left them.
	Cold bool
	// Launch returns the command that runs the binary with args (its first
	// argument is the subcommand: demo, run, query, verify).
	Launch func(args ...string) *exec.Cmd
	// Version is the binary's version, recorded with each build.
	Version string
	// ReadyTimeout bounds the wait for ready with every check passing (and
	// for the steady phase's first refresh).
	ReadyTimeout time.Duration
	// Refresh is the steady phase's --refresh; SteadyRefreshes how many
	// refreshes after its first one are measured (negative: no steady phase).
	Refresh         time.Duration
	SteadyRefreshes int
	// Disk is the service the disk projection assumes (FSBytes 0: none).
	Disk DiskPlan
	// Out receives progress lines (nil: discarded).
	Out io.Writer
}

func (c *HistoryConfig) fill() {
	if len(c.Days) == 0 {
		c.Days = DefaultHistoryDays
	}
	if c.EventsPerDay <= 0 {
		c.EventsPerDay = DefaultHistoryEventsPerDay
	}
	if c.Recording <= 0 {
		c.Recording = DefaultHistoryRecording
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = DefaultHistoryReadyTimeout
	}
	if c.Refresh <= 0 {
		c.Refresh = DefaultHistoryRefresh
	}
	if c.SteadyRefreshes == 0 {
		c.SteadyRefreshes = DefaultHistorySteady
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
}

// loops is the demo's --loops for days of history: whole passes over the
// recording, at least one.
func (c HistoryConfig) loops(days float64) int {
	return max(1, int(math.Round(days*float64(c.EventsPerDay)/float64(c.Recording))))
}

// HistoryReport is benchmarks/history.json.
type HistoryReport struct {
	When    time.Time `json:"when"`
	Machine string    `json:"machine"`
	Command string    `json:"command"`
	Version string    `json:"version"` // the binary measured
	// The configuration the lengths were measured with.
	EventsPerDay    int             `json:"events_per_day"`
	Recording       int             `json:"recording_events"`
	Cold            bool            `json:"cold_cache"`
	Settled         bool            `json:"settled"` // each build ended with a settling start
	ReadyTimeoutS   float64         `json:"ready_timeout_s"`
	RefreshS        float64         `json:"steady_refresh_interval_s"`
	SteadyRefreshes int             `json:"steady_refreshes"`
	Lengths         []LengthResult  `json:"lengths"`
	Targets         []TargetVerdict `json:"targets"`
	Failures        []string        `json:"failures,omitempty"` // what makes the run fail: wrong answers, failed steps
	Missed          []string        `json:"missed,omitempty"`   // targets missed: reported, never a failure, since a slow machine misses them too
	Growth          []GrowthFigure  `json:"growth,omitempty"`
	DiskPlan        DiskPlan        `json:"disk_plan"`
	// Disk projects the longest lake's disk to the real rate (nil: no plan
	// or no disk measured).
	Disk *DiskProjection `json:"disk_projection,omitempty"`
}

// LengthResult is one history length measured.
type LengthResult struct {
	Days    float64       `json:"days"`
	Name    string        `json:"name"`
	Build   BuildRecord   `json:"build"`
	Disk    DiskUsage     `json:"disk"`
	Restart RestartResult `json:"restart"`
	Answers []Answer      `json:"answers"`
	Verify  ChildRun      `json:"verify"`
	Steady  SteadyResult  `json:"steady"`
	// Errors are the steps that could not run or failed (the others are
	// still measured).
	Errors []string `json:"errors,omitempty"`
}

// ChildRun is one run of a short-lived child process.
type ChildRun struct {
	Args     []string `json:"args"`
	Seconds  float64  `json:"seconds"`
	PeakRSS  int64    `json:"peak_rss_bytes"` // the kernel's maxrss of the child (its VmHWM at exit)
	ExitCode int      `json:"exit_code"`
	Output   string   `json:"output,omitempty"` // what it printed (cut to the last lines when long)
	Err      string   `json:"error,omitempty"`
}

// lengthName names a length's directories and rows: "7d", "0.125d".
func lengthName(days float64, perDay int) string {
	return strconv.FormatFloat(days, 'f', -1, 64) + "d-" + strconv.Itoa(perDay)
}

// RunHistory measures every length of cfg in turn and returns the report
// (Command, Machine and When are the caller's). It returns an error only
// when nothing could be measured; failed steps and wrong answers are in
// the report: Failures lists them, and Missed the targets missed, which
// are reported but fail nothing (a slow machine misses them too).
func RunHistory(ctx context.Context, cfg HistoryConfig) (HistoryReport, error) {
	cfg.fill()
	if cfg.Launch == nil {
		return HistoryReport{}, errors.New("history: no launcher for the binary")
	}
	if cfg.WorkDir == "" {
		return HistoryReport{}, errors.New("history: no work directory")
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return HistoryReport{}, fmt.Errorf("history: work directory: %w", err)
	}
	rep := HistoryReport{Version: cfg.Version, EventsPerDay: cfg.EventsPerDay, Recording: cfg.Recording, Cold: cfg.Cold, Settled: cfg.Settle,
		ReadyTimeoutS: cfg.ReadyTimeout.Seconds(), RefreshS: cfg.Refresh.Seconds(), SteadyRefreshes: max(0, cfg.SteadyRefreshes), DiskPlan: cfg.Disk}
	for _, days := range cfg.Days {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		rep.Lengths = append(rep.Lengths, measureLength(ctx, cfg, days))
	}
	rep.evaluate()
	return rep, nil
}

// measureLength builds (or reuses) the lake of days of history and
// measures it.
func measureLength(ctx context.Context, cfg HistoryConfig, days float64) LengthResult {
	name := lengthName(days, cfg.EventsPerDay)
	res := LengthResult{Days: days, Name: name}
	logs := filepath.Join(cfg.WorkDir, name+".logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		res.Errors = append(res.Errors, "logs: "+err.Error())
		return res
	}
	say := func(format string, a ...any) {
		fmt.Fprintf(cfg.Out, "history %s: "+format+"\n", append([]any{name}, a...)...)
	}

	built, err := prepareLake(ctx, cfg, days, logs, say, &res.Build)
	if err != nil {
		res.Errors = append(res.Errors, "build: "+err.Error())
		return res
	}
	if res.Disk, err = diskUsage(ctx, built, days); err != nil {
		res.Errors = append(res.Errors, "disk: "+err.Error())
	}
	say("lake %s: %s on disk (%s a day), %s of it data files awaiting expiry", built, fmtBytes(res.Disk.Total), fmtBytes(int64(res.Disk.PerDay)), fmtBytes(res.Disk.AwaitingExpiry))
	lake := built
	if cfg.Keep || res.Build.Reused != "" {
		lake = filepath.Join(cfg.WorkDir, name+".measure")
		start := time.Now()
		if err := copyTree(built, lake); err != nil {
			res.Errors = append(res.Errors, "copy: "+err.Error())
			return res
		}
		defer os.RemoveAll(lake)
		say("copied to %s in %.0f s (the built lake stays as it is)", lake, time.Since(start).Seconds())
	}
	if cfg.Cold {
		start := time.Now()
		if err := evictPageCache(lake); err != nil {
			res.Errors = append(res.Errors, "evict page cache: "+err.Error())
		} else {
			say("evicted its files from the page cache in %.0f s", time.Since(start).Seconds())
		}
	}

	res.Restart = measureRestart(ctx, cfg, lake, filepath.Join(logs, "restart.log"), say)
	if e := res.Restart.Err; e != "" {
		res.Errors = append(res.Errors, "restart: "+e)
	}
	answers, err := askQuestions(ctx, cfg, lake, filepath.Join(logs, "queries.log"), say)
	res.Answers = answers
	if err != nil {
		res.Errors = append(res.Errors, "questions: "+err.Error())
	}
	res.Verify, _ = runChild(ctx, cfg.Launch, filepath.Join(logs, "verify.log"), "verify", "--data", lake)
	say("verify: exit %d in %.1f s, peak RSS %s", res.Verify.ExitCode, res.Verify.Seconds, fmtBytes(res.Verify.PeakRSS))
	if res.Verify.ExitCode != 0 || res.Verify.Err != "" {
		res.Errors = append(res.Errors, fmt.Sprintf("verify: exit %d %s: %s", res.Verify.ExitCode, res.Verify.Err, oneLine(res.Verify.Output, 5)))
	}
	if cfg.SteadyRefreshes > 0 {
		res.Steady = measureSteady(ctx, cfg, lake, filepath.Join(logs, "steady.log"), say)
		if e := res.Steady.Err; e != "" {
			res.Errors = append(res.Errors, "steady: "+e)
		}
	}
	return res
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fmtBytes renders bytes in MiB or GiB for the reports.
func fmtBytes(n int64) string {
	if n >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}
