package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	command := "go run . bench " + strings.Join(args, " ")
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	switch {
	case bf.soak.Duration > 0:
		bf.soak.ExtraArgs = strings.Fields(bf.soakArgs)
		bf.soak.Launch = func(args []string) *exec.Cmd { return exec.Command(exe, append([]string{"run"}, args...)...) }
		bf.soakRun.Out, bf.soakRun.Command = bf.phases.Out, command
		bf.soak.Progress = display(stdout)
		_, err := bench.RunSoak(ctx, bf.soak, bf.soakRun, stdout)
		return err
	case bf.history.on && bf.render:
		rep, err := bench.ReadHistoryReport(bf.phases.Out, bf.history.Name)
		if err != nil {
			return err
		}
		return bench.WriteHistoryReport(bf.phases.Out, bf.history.Name, rep)
	case bf.history.on:
		launch := func(a ...string) *exec.Cmd { return exec.Command(exe, a...) }
		cfg, probs := bf.history.Config(launch, buildVersion()+", binary "+bench.FileDigest(exe), stdout)
		if err := refused(probs); err != nil {
			return err
		}
		return bench.RunHistoryCommand(ctx, bf.history.HistoryCommand, cfg, bf.phases.Out, command, stdout)
	case bf.render:
		return bench.RenderReport(bf.phases.Out)
	}
	bf.phases.Command, bf.phases.Display = command, display(stdout)
	cfg, probs := bf.phases.Check()
	if err := refused(probs); err != nil {
		return err
	}
	return bf.phases.Run(ctx, cfg, stdout)
}

// benchFlags are bench's settings (the phases', the soak's, the history
// benchmark's).
type benchFlags struct {
	phases   bench.Phases
	render   bool
	soak     bench.SoakConfig
	soakRun  bench.SoakRun
	soakArgs string
	history  historyFlags
}

func registerBenchFlags(fs *flag.FlagSet) *benchFlags {
	bf := &benchFlags{}
	p := &bf.phases
	fs.StringVar(&p.Out, "out", "benchmarks", "directory for results.md, results.json and freshness.svg (with --soak: the soak's report)")
	fs.StringVar(&p.Rates, "rates", "100,1000,5000,10000,50000", "publish rates of the phases, events/s")
	fs.DurationVar(&p.Phase, "phase", 45*time.Second, "length of each phase's publishing")
	fs.StringVar(&p.Triggers, "triggers", "1s,10s", "stream triggers to run every rate with (the default trigger, and 10 s like the original)")
	fs.IntVar(&p.ProducerEvents, "producer-events", 300_000, "events for the producer-ceiling measurement (0: skip)")
	fs.IntVar(&p.DrainEvents, "drain-events", 1_000_000, "backlog for the bronze drain and silver backlog measurements (0: skip)")
	fs.StringVar(&p.Profile, "profile", "", "write each phase's CPU profile (the one its CPU split by stage comes from) as cpu-<rate>-<trigger>.prof, and heap-<rate>-<trigger>.prof when it has caught up, to this directory")
	fs.BoolVar(&bf.render, "render", false, "only rewrite results.md and freshness.svg from the existing results.json in --out (with --history: the history report from its .json)")
	fs.BoolVar(&p.Keep, "keep", false, "keep each phase's data directory and print where it is")
	fs.Int64Var(&p.MaxOffsets, "max-offsets-per-trigger", stream.DefaultMaxOffsetsPerTrigger, "bronze batch size cap in every phase")
	fs.Float64Var(&p.SearchStep, "search-step", 2500, "after the phases, step the rate up by this much (default trigger, 30 s phases) from the fastest phase that kept up until one does not or the highest --rates is reached (0: skip)")
	fs.BoolVar(&p.Smoke, "smoke", false, "a short correctness run (two small phases, no separate measurements): fails if any event is missing from silver")
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
