package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"lakehouse/internal/bench"
	"lakehouse/stream"
)

func init() {
	register(&command{name: "bench", summary: "benchmark freshness, throughput and memory of the whole appliance; writes benchmarks/", run: runBench})
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	bf := registerBenchFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if bf.soak.Duration > 0 {
		return runBenchSoak(ctx, bf, args, stdout)
	}
	if bf.history.on {
		return runBenchHistory(ctx, bf, args, stdout)
	}
	if bf.render {
		js, err := os.ReadFile(filepath.Join(bf.out, "results.json"))
		if err != nil {
			return err
		}
		var rep bench.Report
		if err := json.Unmarshal(js, &rep); err != nil {
			return fmt.Errorf("read results.json: %w", err)
		}
		return bench.WriteReport(bf.out, rep)
	}
	if bf.smoke {
		bf.rates, bf.triggers, bf.phase, bf.producerN, bf.drainN, bf.searchStep = "200,2000", "500ms", 3*time.Second, 0, 0, 0
	}
	rates, err := parseFloats(bf.rates)
	if err != nil {
		return fmt.Errorf("--rates: %w", err)
	}
	var triggers []time.Duration
	for _, s := range strings.Split(bf.triggers, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--triggers: %w", err)
		}
		triggers = append(triggers, d)
	}
	base, err := os.MkdirTemp("", "lakehouse-bench-")
	if err != nil {
		return err
	}
	if bf.keep {
		fmt.Fprintf(stdout, "bench: phase data kept under %s\n", base)
	} else {
		defer os.RemoveAll(base)
	}
	cfg := bench.Config{Options: bench.Options{Keep: bf.keep, MaxOffsets: bf.maxOffsets},
		Rates: rates, Triggers: triggers, Phase: bf.phase, ProducerEvents: bf.producerN, DrainEvents: bf.drainN,
		SearchStep: bf.searchStep, Display: display(stdout)}
	if bf.profile != "" {
		if err := os.MkdirAll(bf.profile, 0o755); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
		cfg.ProfileDir = bf.profile
	}
	rep := bench.Report{When: time.Now().UTC(), Machine: bench.Machine(), Command: "go run . bench " + strings.Join(args, " ")}
	if err := bench.Run(ctx, cfg, &rep, base, stdout); err != nil {
		return err
	}
	if !bf.smoke {
		if err := bench.WriteReport(bf.out, rep); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "bench: wrote %s\n", filepath.Join(bf.out, "results.md"))
	}
	return bench.MissingFromSilver(rep)
}

// benchFlags are bench's settings (the phases', the soak's).
type benchFlags struct {
	out, rates, triggers, profile string
	phase                         time.Duration
	producerN, drainN             int
	render, smoke, keep           bool
	maxOffsets                    int64
	searchStep                    float64
	soak                          bench.SoakConfig
	soakRun                       bench.SoakRun
	soakArgs                      string
	history                       historyFlags
}

func registerBenchFlags(fs *flag.FlagSet) *benchFlags {
	bf := &benchFlags{}
	fs.StringVar(&bf.out, "out", "benchmarks", "directory for results.md, results.json and freshness.svg (with --soak: the soak's report)")
	fs.StringVar(&bf.rates, "rates", "100,1000,5000,10000,50000", "publish rates of the phases, events/s")
	fs.DurationVar(&bf.phase, "phase", 45*time.Second, "length of each phase's publishing")
	fs.StringVar(&bf.triggers, "triggers", "1s,10s", "stream triggers to run every rate with (the default trigger, and 10 s like the original)")
	fs.IntVar(&bf.producerN, "producer-events", 300_000, "events for the producer-ceiling measurement (0: skip)")
	fs.IntVar(&bf.drainN, "drain-events", 1_000_000, "backlog for the bronze drain and silver backlog measurements (0: skip)")
	fs.StringVar(&bf.profile, "profile", "", "write each phase's CPU profile (the one its CPU split by stage comes from) as cpu-<rate>-<trigger>.prof, and heap-<rate>-<trigger>.prof when it has caught up, to this directory")
	fs.BoolVar(&bf.render, "render", false, "only rewrite results.md and freshness.svg from the existing results.json in --out (with --history: the history report from its .json)")
	fs.BoolVar(&bf.keep, "keep", false, "keep each phase's data directory and print where it is")
	fs.Int64Var(&bf.maxOffsets, "max-offsets-per-trigger", stream.DefaultMaxOffsetsPerTrigger, "bronze batch size cap in every phase")
	fs.Float64Var(&bf.searchStep, "search-step", 2500, "after the phases, step the rate up by this much (default trigger, 30 s phases) from the fastest phase that kept up until one does not or the highest --rates is reached (0: skip)")
	fs.BoolVar(&bf.smoke, "smoke", false, "a short correctness run (two small phases, no separate measurements): fails if any event is missing from silver")
	fs.DurationVar(&bf.soak.Duration, "soak", 0, "run the soak instead of the phases: the appliance (`run`, defaults) as a child process fed a live-like stream for this long, sampled from outside; writes <out>/<soak-name>.md, .svg and .json (the summary, not the samples)")
	fs.Float64Var(&bf.soak.Rate, "soak-rate", bench.DefaultSoakRate, "soak: base rate, events/s")
	fs.Float64Var(&bf.soak.Burst, "soak-burst", bench.DefaultSoakBurst, "soak: rate during bursts, events/s")
	fs.DurationVar(&bf.soak.BurstEvery, "soak-burst-every", bench.DefaultSoakBurstEvery, "soak: a burst at the end of every such interval")
	fs.DurationVar(&bf.soak.BurstLength, "soak-burst-length", bench.DefaultSoakBurstLength, "soak: length of each burst")
	fs.DurationVar(&bf.soak.Sample, "soak-sample", bench.DefaultSoakSample, "soak: sampling interval")
	fs.Int64Var(&bf.soak.Seed, "soak-seed", 0, "soak: replay seed (0: random, recorded in the report)")
	fs.IntVar(&bf.soak.EventBytes, "soak-event-bytes", 0, "soak: pad every event (in its comment) to this many bytes (0: the generated events as they are, about 1.3 KB)")
	fs.Func("soak-warehouse", "soak: the appliance's warehouse: local (its data directory) or s3 (gofakes3 in this process on 127.0.0.1, in memory; the report then counts the object-store requests per event and per day, in USD at list prices, and samples no tables)", func(v string) error {
		switch v {
		case "local":
			bf.soak.S3 = false
		case "s3":
			bf.soak.S3 = true
		default:
			return fmt.Errorf("want local or s3, got %q", v)
		}
		return nil
	})
	fs.StringVar(&bf.soakArgs, "soak-args", "", `soak: extra arguments for the appliance's run, e.g. "--trigger 2s"`)
	fs.StringVar(&bf.soakRun.Name, "soak-name", "soak", "soak: base name of the report files in --out")
	fs.BoolVar(&bf.soakRun.Keep, "soak-keep", false, "soak: keep the data directory and the appliance's log (kept anyway when the soak fails)")
	bf.history.register(fs)
	return bf
}

// runBenchSoak runs the soak with this binary's run as the appliance.
func runBenchSoak(ctx context.Context, bf *benchFlags, args []string, stdout io.Writer) error {
	bf.soak.ExtraArgs = strings.Fields(bf.soakArgs)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	bf.soak.Launch = func(args []string) *exec.Cmd { return exec.Command(exe, append([]string{"run"}, args...)...) }
	bf.soakRun.Out, bf.soakRun.Command = bf.out, "go run . bench "+strings.Join(args, " ")
	bf.soak.Progress = display(stdout)
	_, err = bench.RunSoak(ctx, bf.soak, bf.soakRun, stdout)
	return err
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, v)
	}
	return out, nil
}
