package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"lakehouse/internal/appliance"
	"lakehouse/internal/bench"
)

// historyFlags are bench --history's settings.
type historyFlags struct {
	on           bool
	days         string
	perDay       int
	recording    int
	keep         string
	lakes        map[float64]string
	rebuild      bool
	settle       bool
	cache        string
	readyTimeout time.Duration
	refresh      time.Duration
	steady       int
	name         string
}

func (h *historyFlags) register(fs *flag.FlagSet) {
	h.lakes = map[float64]string{}
	fs.BoolVar(&h.on, "history", false, "run the history benchmark instead of the phases: for each --history-days, a lake built by this binary's demo, the appliance restarted on it (`run --no-ingest`, a child process measured from outside), questions through `query` checked against an independent reading, verify, disk by component and a steady-state refresh; writes <out>/<history-name>.md, .json and .svg")
	fs.StringVar(&h.days, "history-days", "1,7,28", "history: lengths of history to measure, in days (fractions allowed)")
	fs.IntVar(&h.perDay, "history-events-per-day", bench.DefaultHistoryEventsPerDay, "history: density of the history (the real stream is about 3,000,000 a day)")
	fs.IntVar(&h.recording, "history-recording", bench.DefaultHistoryRecording, "history: events in the demo's recording (its --events; --loops makes up the rest)")
	fs.StringVar(&h.keep, "history-keep", "", "history: keep the built lakes (and the children's logs) in this directory and reuse those built with the same parameters on later runs; every measurement then runs on a copy (default: a temporary directory, removed after a run that passed)")
	fs.Func("history-lake", "history: DAYS=DIR measures the existing lake DIR (read only, on a copy) as the length DAYS instead of building one; repeatable", func(v string) error {
		d, dir, ok := strings.Cut(v, "=")
		days, err := strconv.ParseFloat(d, 64)
		if !ok || err != nil || days <= 0 || dir == "" {
			return fmt.Errorf("want DAYS=DIR, got %q", v)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		h.lakes[days] = abs
		return nil
	})
	fs.BoolVar(&h.rebuild, "history-rebuild", false, "history: build every lake again even when --history-keep holds one with the same parameters")
	fs.BoolVar(&h.settle, "history-settle", true, "history: end each build with one start of the appliance (no ingest) that lets its compaction catch up, so the restart measured is that of a service that has been running rather than the first after the demo (false: measure the lake as the demo left it)")
	fs.StringVar(&h.cache, "history-cache", "cold", "history: the page cache at the restart: cold (the lake's files evicted first, as after a reboot) or warm (as the build or copy left them)")
	fs.DurationVar(&h.readyTimeout, "history-ready-timeout", bench.DefaultHistoryReadyTimeout, "history: give up waiting for ready with every check passing (and for the steady phase's first refresh) after this long")
	fs.DurationVar(&h.refresh, "history-refresh", bench.DefaultHistoryRefresh, "history: the steady phase's --refresh")
	fs.IntVar(&h.steady, "history-steady", bench.DefaultHistorySteady, "history: steady-state refreshes measured after the steady phase's first (0: no steady phase)")
	fs.StringVar(&h.name, "history-name", "history", "history: base name of the report files in --out")
}

// config turns the flags into the benchmark's configuration.
func (h *historyFlags) config(launch func(...string) *exec.Cmd, out io.Writer) (bench.HistoryConfig, error) {
	cfg := bench.HistoryConfig{EventsPerDay: h.perDay, Recording: h.recording, Keep: h.keep != "", Rebuild: h.rebuild, Settle: h.settle,
		Lakes: h.lakes, Launch: launch, Version: buildVersion(), ReadyTimeout: h.readyTimeout, Refresh: h.refresh,
		SteadyRefreshes: h.steady, Out: out,
		Disk: bench.DiskPlan{FSBytes: bench.TargetDiskFS, RealPerDay: bench.RealEventsPerDay, BrokerShare: 1.0 / appliance.RetentionBytesShare,
			BrokerAge: appliance.DefaultRetention, Reserve: appliance.DefaultDiskReserve}}
	var fe appliance.Problems
	for _, s := range strings.Split(h.days, ",") {
		d, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || d <= 0 {
			fe.Add("history-days", "%q: want positive numbers of days", s)
			break
		}
		cfg.Days = append(cfg.Days, d)
	}
	switch h.cache {
	case "cold", "warm":
		cfg.Cold = h.cache == "cold"
	default:
		fe.Add("history-cache", "%q: want cold or warm", h.cache)
	}
	if h.perDay <= 0 {
		fe.Add("history-events-per-day", "%d: want at least 1", h.perDay)
	}
	if h.recording <= 0 {
		fe.Add("history-recording", "%d: want at least 1", h.recording)
	}
	fe.Positive("history-ready-timeout", h.readyTimeout)
	fe.Positive("history-refresh", h.refresh)
	if h.steady == 0 {
		cfg.SteadyRefreshes = -1
	} else if h.steady < 0 {
		fe.Add("history-steady", "%d: want 0 or more", h.steady)
	}
	return cfg, refused(fe)
}

// runBenchHistory runs the history benchmark with this binary as the
// appliance and writes its report. It fails when an answer was wrong, a
// step failed or a target was missed, after writing the report.
func runBenchHistory(ctx context.Context, bf *benchFlags, args []string, stdout io.Writer) error {
	h := bf.history
	if bf.render {
		rep, err := bench.ReadHistoryReport(bf.out, h.name)
		if err != nil {
			return err
		}
		return bench.WriteHistoryReport(bf.out, h.name, rep)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	cfg, err := h.config(func(a ...string) *exec.Cmd { return exec.Command(exe, a...) }, stdout)
	if err != nil {
		return err
	}
	cfg.Version = buildVersion() + ", binary " + fileDigest(exe)
	return historyRun(ctx, cfg, h, bf.out, "go run . bench "+strings.Join(args, " "), stdout)
}

// fileDigest names the binary by its content (the start of its SHA-256):
// a lake kept by an earlier run records what built it, also when the
// toolchain stamped no VCS revision.
func fileDigest(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unknown"
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:12]
}

// historyRun runs cfg in its work directory (h.keep, or a temporary one
// removed after a run that passed) and writes the report into out.
func historyRun(ctx context.Context, cfg bench.HistoryConfig, h historyFlags, out, command string, stdout io.Writer) error {
	if h.keep != "" {
		abs, err := filepath.Abs(h.keep)
		if err != nil {
			return err
		}
		cfg.WorkDir = abs
	} else {
		dir, err := os.MkdirTemp("", "lakehouse-history-")
		if err != nil {
			return err
		}
		cfg.WorkDir = dir
	}
	rep, err := bench.RunHistory(ctx, cfg)
	rep.When, rep.Machine, rep.Command = time.Now().UTC(), bench.Machine(), command
	if len(rep.Lengths) > 0 {
		if werr := bench.WriteHistoryReport(out, h.name, rep); werr != nil {
			return errors.Join(err, fmt.Errorf("write the history report: %w", werr))
		}
		fmt.Fprintf(stdout, "bench: wrote %s\n", filepath.Join(out, h.name+".md"))
	}
	for _, t := range rep.Targets {
		fmt.Fprintf(stdout, "bench: target %s: %s: %s\n", map[bool]string{true: "met", false: "MISSED"}[t.Met], t.Target, t.Value)
	}
	if err == nil && len(rep.Failures) > 0 {
		err = fmt.Errorf("history: %d failures:\n  %s", len(rep.Failures), strings.Join(rep.Failures, "\n  "))
	}
	if h.keep == "" {
		if err != nil {
			fmt.Fprintf(stdout, "bench: lakes and logs kept in %s\n", cfg.WorkDir)
		} else if rerr := os.RemoveAll(cfg.WorkDir); rerr != nil {
			return rerr
		}
	}
	return err
}
