package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"lakehouse/internal/appliance"
)

// HistoryCommand is `bench --history` as its command line gives it:
// package main fills it from flags, Config checks it and RunHistoryCommand
// runs it. Setting names in the problems Config returns are the flags'.
type HistoryCommand struct {
	Days         string // comma-separated lengths in days
	EventsPerDay int
	Recording    int
	// Keep is the directory that keeps the built lakes ("": a temporary
	// one, removed after a run that passed).
	Keep         string
	Lakes        map[float64]string
	Rebuild      bool
	Settle       bool
	Cache        string // cold or warm
	ReadyTimeout time.Duration
	Refresh      time.Duration
	Steady       int // refreshes after the steady phase's first (0: no steady phase)
	Name         string
}

// Config turns the command's settings into RunHistory's configuration,
// with the disk projection of the appliance's defaults; launch runs the
// binary under test and version names it.
func (h HistoryCommand) Config(launch func(...string) *exec.Cmd, version string, out io.Writer) (HistoryConfig, appliance.Problems) {
	cfg := HistoryConfig{EventsPerDay: h.EventsPerDay, Recording: h.Recording, Keep: h.Keep != "", Rebuild: h.Rebuild, Settle: h.Settle,
		Lakes: h.Lakes, Launch: launch, Version: version, ReadyTimeout: h.ReadyTimeout, Refresh: h.Refresh,
		SteadyRefreshes: h.Steady, Out: out,
		Disk: DiskPlan{FSBytes: TargetDiskFS, RealPerDay: RealEventsPerDay, BrokerShare: 1.0 / appliance.RetentionBytesShare,
			BrokerAge: appliance.DefaultRetention, Reserve: appliance.DefaultDiskReserve}}
	var probs appliance.Problems
	cfg.Days = positives(&probs, "history-days", h.Days, "days")
	switch h.Cache {
	case "cold", "warm":
		cfg.Cold = h.Cache == "cold"
	default:
		probs.Add("history-cache", "%q: want cold or warm", h.Cache)
	}
	if h.EventsPerDay <= 0 {
		probs.Add("history-events-per-day", "%d: want at least 1", h.EventsPerDay)
	}
	if h.Recording <= 0 {
		probs.Add("history-recording", "%d: want at least 1", h.Recording)
	}
	probs.Positive("history-ready-timeout", h.ReadyTimeout)
	probs.Positive("history-refresh", h.Refresh)
	if h.Steady == 0 {
		cfg.SteadyRefreshes = -1
	} else if h.Steady < 0 {
		probs.Add("history-steady", "%d: want 0 or more", h.Steady)
	}
	return cfg, probs
}

// RunHistoryCommand runs cfg in its work directory (h.Keep, or a temporary
// one removed after a run that passed) and writes the report named h.Name
// into out; command is the command line the report records. It fails when
// an answer was wrong, a step failed or a target was missed, after writing
// the report.
func RunHistoryCommand(ctx context.Context, h HistoryCommand, cfg HistoryConfig, out, command string, stdout io.Writer) error {
	if h.Keep != "" {
		abs, err := filepath.Abs(h.Keep)
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
	rep, err := RunHistory(ctx, cfg)
	rep.When, rep.Machine, rep.Command = time.Now().UTC(), Machine(), command
	if len(rep.Lengths) > 0 {
		if werr := WriteHistoryReport(out, h.Name, rep); werr != nil {
			return errors.Join(err, fmt.Errorf("write the history report: %w", werr))
		}
		fmt.Fprintf(stdout, "bench: wrote %s\n", filepath.Join(out, h.Name+".md"))
	}
	for _, t := range rep.Targets {
		fmt.Fprintf(stdout, "bench: target %s: %s: %s\n", map[bool]string{true: "met", false: "MISSED"}[t.Met], t.Target, t.Value)
	}
	if err == nil && len(rep.Failures) > 0 {
		err = fmt.Errorf("history: %d failures:\n  %s", len(rep.Failures), strings.Join(rep.Failures, "\n  "))
	}
	if h.Keep == "" {
		if err != nil {
			fmt.Fprintf(stdout, "bench: lakes and logs kept in %s\n", cfg.WorkDir)
		} else if rerr := os.RemoveAll(cfg.WorkDir); rerr != nil {
			return rerr
		}
	}
	return err
}

// FileDigest names a binary by its content (the start of its SHA-256): a
// lake kept by an earlier run records what built it, also when the
// toolchain stamped no VCS revision.
func FileDigest(path string) string {
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
