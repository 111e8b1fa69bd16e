package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"lakehouse/internal/bench"
)

// soakOptions are the bench --soak settings outside bench.SoakConfig.
type soakOptions struct {
	out, name string // report files: <out>/<name>.md, .json, .svg
	command   string // what produced the report
	keep      bool   // keep the data directory after a soak that passed
}

// runSoak runs bench.Soak on a fresh temporary data directory and writes
// its report, also for a soak that failed or was interrupted once it has
// samples. It fails when the soak did, or when not every event reached
// silver; the data directory and the appliance's log are then kept.
func runSoak(ctx context.Context, cfg bench.SoakConfig, opt soakOptions, stdout io.Writer) (bench.SoakResult, error) {
	base, err := os.MkdirTemp("", "lakehouse-soak-")
	if err != nil {
		return bench.SoakResult{}, err
	}
	cfg.DataDir = filepath.Join(base, "data")
	cfg.LogPath = filepath.Join(base, "appliance.log")
	cfg.Out = stdout
	cfg.Progress = display(stdout)
	res, err := bench.Soak(ctx, cfg)
	if len(res.Samples) > 0 {
		rep := bench.SoakReport{When: time.Now().UTC(), Command: opt.command, Machine: bench.Machine(), SoakResult: res}
		if werr := bench.WriteSoakReport(opt.out, opt.name, rep); werr != nil {
			return res, fmt.Errorf("write soak report: %w", werr)
		}
		fmt.Fprintf(stdout, "bench: wrote %s\n", filepath.Join(opt.out, opt.name+".md"))
	}
	if err == nil && !res.Summary.EverythingInSilver {
		err = fmt.Errorf("soak: not every event is in silver (silver %d of %d; failed checks: %s)",
			res.Summary.Silver, res.Summary.ExpectedSilver, strings.Join(res.Summary.FailedChecks, ", "))
	}
	if err != nil || opt.keep {
		fmt.Fprintf(stdout, "bench: soak data and the appliance's log kept in %s\n", base)
		return res, err
	}
	return res, os.RemoveAll(base)
}
