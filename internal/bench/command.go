package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"lakehouse/internal/appliance"
	"lakehouse/internal/progress"
)

// Phases is `lakehouse bench` without --soak or --history, as its command
// line gives it: package main fills it from flags and calls Run. Setting
// names in the problems Check returns are the flags'.
type Phases struct {
	Out             string // where results.md, results.json and freshness.svg go
	Rates, Triggers string // comma-separated
	Phase           time.Duration
	ProducerEvents  int
	DrainEvents     int
	Profile         string // directory for each phase's profiles ("": none)
	Keep            bool
	MaxOffsets      int64
	SearchStep      float64
	// Smoke is a short correctness run: two small phases, no separate
	// measurements, no report written.
	Smoke   bool
	Command string // the command line the report records
	Display progress.Display
}

// Check parses the lists and refuses what no run could use.
func (p *Phases) Check() (Config, appliance.Problems) {
	if p.Smoke {
		p.Rates, p.Triggers, p.Phase, p.ProducerEvents, p.DrainEvents, p.SearchStep = "200,2000", "500ms", 3*time.Second, 0, 0, 0
	}
	cfg := Config{Options: Options{Keep: p.Keep, MaxOffsets: p.MaxOffsets, ProfileDir: p.Profile},
		Phase: p.Phase, ProducerEvents: p.ProducerEvents, DrainEvents: p.DrainEvents, SearchStep: p.SearchStep, Display: p.Display}
	var probs appliance.Problems
	cfg.Rates = positives(&probs, "rates", p.Rates, "events per second")
	for _, s := range strings.Split(p.Triggers, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			probs.Add("triggers", "%q: want positive durations", s)
			break
		}
		cfg.Triggers = append(cfg.Triggers, d)
	}
	probs.Positive("phase", p.Phase)
	return cfg, probs
}

// Run runs the phases cfg (from Check) describes, each in a directory
// under a temporary one (kept with Keep), writes the report unless Smoke,
// and fails when a phase lost an event.
func (p *Phases) Run(ctx context.Context, cfg Config, stdout io.Writer) error {
	base, err := os.MkdirTemp("", "lakehouse-bench-")
	if err != nil {
		return err
	}
	if p.Keep {
		fmt.Fprintf(stdout, "bench: phase data kept under %s\n", base)
	} else {
		defer os.RemoveAll(base)
	}
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return fmt.Errorf("profile directory: %w", err)
		}
	}
	rep := Report{When: time.Now().UTC(), Machine: Machine(), Command: p.Command}
	if err := Run(ctx, cfg, &rep, base, stdout); err != nil {
		return err
	}
	if !p.Smoke {
		if err := WriteReport(p.Out, rep); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "bench: wrote %s\n", filepath.Join(p.Out, "results.md"))
	}
	return MissingFromSilver(rep)
}

// RenderReport rewrites results.md and freshness.svg in dir from the
// results.json there.
func RenderReport(dir string) error {
	js, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	var rep Report
	if err := json.Unmarshal(js, &rep); err != nil {
		return fmt.Errorf("read results.json: %w", err)
	}
	return WriteReport(dir, rep)
}

// positives parses list, comma-separated positive numbers of unit; the
// first item that is not one is a problem of setting.
func positives(probs *appliance.Problems, setting, list, unit string) []float64 {
	var out []float64
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			probs.Add(setting, "%q: want positive numbers of %s", f, unit)
			return nil
		}
		out = append(out, v)
	}
	return out
}
