package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SoakRun is where a soak's report goes and what happens to its data.
type SoakRun struct {
	Out, Name string // report files: <Out>/<Name>.md, .json, .svg
	Command   string // what produced the report
	Keep      bool   // keep the data directory after a soak that passed
}

// RunSoak runs Soak on a fresh temporary data directory and writes its
// report, also for a soak that failed or was interrupted once it has
// samples. It fails when the soak did, or when not every event reached
// silver; the data directory and the appliance's log are then kept.
// cfg.Progress is the caller's (a bar on a terminal); its lines go to
// stdout.
func RunSoak(ctx context.Context, cfg SoakConfig, run SoakRun, stdout io.Writer) (SoakResult, error) {
	base, err := os.MkdirTemp("", "lakehouse-soak-")
	if err != nil {
		return SoakResult{}, err
	}
	cfg.DataDir = filepath.Join(base, "data")
	cfg.LogPath = filepath.Join(base, "appliance.log")
	cfg.Out = stdout
	res, err := Soak(ctx, cfg)
	if len(res.Samples) > 0 {
		rep := SoakReport{When: time.Now().UTC(), Command: run.Command, Machine: Machine(), SoakResult: res}
		if werr := WriteSoakReport(run.Out, run.Name, rep); werr != nil {
			return res, fmt.Errorf("write soak report: %w", werr)
		}
		fmt.Fprintf(stdout, "bench: wrote %s\n", filepath.Join(run.Out, run.Name+".md"))
	}
	if err == nil && !res.Summary.EverythingInSilver {
		err = fmt.Errorf("soak: not every event is in silver (silver %d of %d; failed checks: %s)",
			res.Summary.Silver, res.Summary.ExpectedSilver, strings.Join(res.Summary.FailedChecks, ", "))
	}
	if err != nil || run.Keep {
		fmt.Fprintf(stdout, "bench: soak data and the appliance's log kept in %s\n", base)
		return res, err
	}
	return res, os.RemoveAll(base)
}
