package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"lakehouse/internal/humanize"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"lakehouse/verify"
)

func init() {
	register(&command{name: "bench", summary: "benchmark freshness, throughput and memory of the whole appliance; writes benchmarks/", run: runBench})
}

// benchReport is benchmarks/results.json.
type benchReport struct {
	When             time.Time     `json:"when"`
	Machine          string        `json:"machine"`
	Command          string        `json:"command"`
	Phases           []phaseResult `json:"phases"`
	ProducerCeiling  float64       `json:"producer_ceiling_events_per_s"`
	BronzeDrainRate  float64       `json:"bronze_drain_records_per_s"`
	BronzeDrainMBps  float64       `json:"bronze_drain_mb_per_s"`
	MaxSustainedRate float64       `json:"max_sustained_rate"`
	// Search holds the phases of the step-up search for the highest
	// sustainable rate (default trigger, above the fastest phase kept up).
	Search []phaseResult `json:"max_rate_search,omitempty"`
}

// originalFigures are the original pipeline's published results (45 s
// phases, 10 s trigger, local run): rate -> p95 freshness in seconds.
var originalFigures = []struct {
	rate, achieved, p95 float64
}{{100, 100, 20.2}, {1000, 1000, 20.2}, {5000, 5000, 20.6}, {15000, 9596, 21.0}}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	bf := registerBenchFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if bf.soak.Duration > 0 {
		return runBenchSoak(ctx, bf, args, stdout)
	}
	if bf.render {
		js, err := os.ReadFile(filepath.Join(bf.out, "results.json"))
		if err != nil {
			return err
		}
		var rep benchReport
		if err := json.Unmarshal(js, &rep); err != nil {
			return fmt.Errorf("read results.json: %w", err)
		}
		return writeBenchReport(bf.out, rep)
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
	if benchKeep {
		fmt.Fprintf(stdout, "bench: phase data kept under %s\n", base)
	} else {
		defer os.RemoveAll(base)
	}
	if bf.profile != "" {
		stop, err := startBenchProfile(bf.profile)
		if err != nil {
			return err
		}
		defer stop()
	}
	rep := benchReport{When: time.Now().UTC(), Machine: machine(), Command: "go run . bench " + strings.Join(args, " ")}
	if err := runBenchPhases(ctx, bf, &rep, rates, triggers, base, stdout); err != nil {
		return err
	}
	if !bf.smoke {
		if err := writeBenchReport(bf.out, rep); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "bench: wrote %s\n", filepath.Join(bf.out, "results.md"))
	}
	return missingFromSilver(rep)
}

// benchFlags are bench's settings (the phases', the soak's).
type benchFlags struct {
	out, rates, triggers, profile string
	phase                         time.Duration
	producerN, drainN             int
	render, smoke                 bool
	searchStep                    float64
	soak                          verify.SoakConfig
	soakOpt                       soakOptions
	soakArgs                      string
}

func registerBenchFlags(fs *flag.FlagSet) *benchFlags {
	bf := &benchFlags{}
	fs.StringVar(&bf.out, "out", "benchmarks", "directory for results.md, results.json and freshness.svg (with --soak: the soak's report)")
	fs.StringVar(&bf.rates, "rates", "100,1000,5000,10000,50000", "publish rates of the phases, events/s")
	fs.DurationVar(&bf.phase, "phase", 45*time.Second, "length of each phase's publishing")
	fs.StringVar(&bf.triggers, "triggers", "1s,10s", "stream triggers to run every rate with (the default trigger, and 10 s like the original)")
	fs.IntVar(&bf.producerN, "producer-events", 300_000, "events for the producer-ceiling measurement (0: skip)")
	fs.IntVar(&bf.drainN, "drain-events", 1_000_000, "backlog for the bronze drain measurement (0: skip)")
	fs.StringVar(&bf.profile, "profile", "", "write cpu.prof (whole run) and heap-<phase>.prof (when each phase has caught up) to this directory")
	fs.BoolVar(&bf.render, "render", false, "only rewrite results.md and freshness.svg from the existing results.json in --out")
	fs.BoolVar(&benchKeep, "keep", false, "keep each phase's data directory and print where it is")
	fs.Int64Var(&benchMaxOffsets, "max-offsets-per-trigger", benchMaxOffsets, "bronze batch size cap in every phase")
	fs.Float64Var(&bf.searchStep, "search-step", 2500, "after the phases, step the rate up by this much (default trigger, 30 s phases) from the fastest phase that kept up until one does not or the highest --rates is reached (0: skip)")
	fs.BoolVar(&bf.smoke, "smoke", false, "a short correctness run (two small phases, no separate measurements): fails if any event is missing from silver")
	fs.DurationVar(&bf.soak.Duration, "soak", 0, "run the soak instead of the phases: the appliance (`run`, defaults) as a child process fed a live-like stream for this long, sampled from outside; writes <out>/<soak-name>.md, .json and .svg")
	fs.Float64Var(&bf.soak.Rate, "soak-rate", verify.DefaultSoakRate, "soak: base rate, events/s")
	fs.Float64Var(&bf.soak.Burst, "soak-burst", verify.DefaultSoakBurst, "soak: rate during bursts, events/s")
	fs.DurationVar(&bf.soak.BurstEvery, "soak-burst-every", verify.DefaultSoakBurstEvery, "soak: a burst at the end of every such interval")
	fs.DurationVar(&bf.soak.BurstLength, "soak-burst-length", verify.DefaultSoakBurstLength, "soak: length of each burst")
	fs.DurationVar(&bf.soak.Sample, "soak-sample", verify.DefaultSoakSample, "soak: sampling interval")
	fs.Int64Var(&bf.soak.Seed, "soak-seed", 0, "soak: replay seed (0: random, recorded in the report)")
	fs.IntVar(&bf.soak.EventBytes, "soak-event-bytes", 0, "soak: pad every event (in its comment) to this many bytes (0: the generated events as they are, about 1.3 KB)")
	fs.StringVar(&bf.soakArgs, "soak-args", "", `soak: extra arguments for the appliance's run, e.g. "--trigger 2s"`)
	fs.StringVar(&bf.soakOpt.name, "soak-name", "soak", "soak: base name of the report files in --out")
	fs.BoolVar(&bf.soakOpt.keep, "soak-keep", false, "soak: keep the data directory and the appliance's log (kept anyway when the soak fails)")
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
	bf.soakOpt.out, bf.soakOpt.command = bf.out, "go run . bench "+strings.Join(args, " ")
	_, err = runSoak(ctx, bf.soak, bf.soakOpt, stdout)
	return err
}

// startBenchProfile writes a CPU profile of the whole run (and the phases'
// heap profiles) to dir; the returned function stops it.
func startBenchProfile(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, "cpu.prof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	benchHeapDir = dir
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// runBenchPhases runs every rate with every trigger, the stage ceilings,
// and the step-up search for the fastest sustained rate, into rep.
func runBenchPhases(ctx context.Context, bf *benchFlags, rep *benchReport, rates []float64, triggers []time.Duration, base string, stdout io.Writer) error {
	show := display(stdout)
	for _, trig := range triggers {
		for _, rate := range rates {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rep.Phases = append(rep.Phases, runPhase(ctx, benchPhase{Rate: rate, Trigger: trig, Duration: bf.phase}, base, show))
		}
	}
	var err error
	if bf.producerN > 0 {
		if rep.ProducerCeiling, err = producerCeiling(ctx, base, bf.producerN); err != nil {
			return fmt.Errorf("producer ceiling: %w", err)
		}
		fmt.Fprintf(stdout, "bench: producer ceiling %s events/s\n", humanize.Count(int64(rep.ProducerCeiling)))
	}
	if bf.drainN > 0 {
		if rep.BronzeDrainRate, rep.BronzeDrainMBps, err = bronzeDrain(ctx, base, bf.drainN); err != nil {
			return fmt.Errorf("bronze drain: %w", err)
		}
		fmt.Fprintf(stdout, "bench: bronze drain %s records/s (%.1f MB/s)\n", humanize.Count(int64(rep.BronzeDrainRate)), rep.BronzeDrainMBps)
	}
	for _, p := range rep.Phases {
		if p.KeptUp && p.Phase.Trigger == triggers[0] && p.Phase.Rate > rep.MaxSustainedRate {
			rep.MaxSustainedRate = p.Phase.Rate
		}
	}
	if bf.searchStep > 0 && rep.MaxSustainedRate > 0 {
		top := slices.Max(rates)
		for rate := rep.MaxSustainedRate + bf.searchStep; rate < top && ctx.Err() == nil; rate += bf.searchStep {
			p := runPhase(ctx, benchPhase{Rate: rate, Trigger: triggers[0], Duration: 30 * time.Second}, base, show)
			rep.Search = append(rep.Search, p)
			if !p.KeptUp {
				break
			}
			rep.MaxSustainedRate = rate
		}
	}
	return nil
}

// missingFromSilver fails a run in which any phase lost an event on the way
// to silver.
func missingFromSilver(rep benchReport) error {
	var missing []string
	for _, p := range append(rep.Phases, rep.Search...) {
		if p.Error != "" || p.FoundSilver != p.Expected || p.DistinctSilver != p.Expected {
			missing = append(missing, fmt.Sprintf("%s: silver %d of %d (%d distinct; broker %d, DLQ %d, bronze %d; silver dropped %d late, %d duplicates, %d unparseable) %s",
				p.Phase.name(), p.FoundSilver, p.Expected, p.DistinctSilver, p.BrokerMessages, p.DLQMessages, p.BronzeRows, p.SilverLate, p.SilverDups, p.SilverBad, p.Error))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("events missing from silver: %s", strings.Join(missing, "; "))
	}
	return nil
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

func machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s/%s, %d cores, %s, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model, runtime.Version())
}

func writeBenchReport(dir string, rep benchReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "freshness.svg"), []byte(freshnessSVG(rep.Phases)), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmark results\n\nProduced by `%s` on %s (%s).\n\n", strings.TrimSpace(rep.Command), rep.When.Format("2006-01-02 15:04 MST"), rep.Machine)
	b.WriteString("Freshness is each silver row's commit time (its snapshot's timestamp) minus the time the replay server sent the event (its `meta.dt`). Counts come from the tables on disk after the phase; CPU from rusage; peak RSS is the kernel's VmHWM, reset per phase, and includes the pages of broker.db that bbolt maps (file cache the kernel can drop); peak anon is the largest anonymous resident memory (heap, stacks, buffers) sampled every 100 ms. The trigger column is bronze's; silver and sessions run as soon as the table they read commits (`--downstream-trigger 0`, the default).\n\n")
	writePhaseTable(&b, rep.Phases)
	b.WriteString("\nThe original pipeline (45 s phases, 10 s trigger, local run), for comparison:\n\n| asked ev/s | achieved ev/s | p95 s |\n|---|---|---|\n")
	for _, o := range originalFigures {
		fmt.Fprintf(&b, "| %s | %s | %.1f |\n", humanize.Count(int64(o.rate)), humanize.Count(int64(o.achieved)), o.p95)
	}
	b.WriteString("\nIts one-process producer topped out near 10,000 events/s.\n\n## Separate measurements\n\n")
	fmt.Fprintf(&b, "- producer ceiling (loopback SSE -> contract -> durable broker): %s events/s\n", humanize.Count(int64(rep.ProducerCeiling)))
	fmt.Fprintf(&b, "- bronze backlog drain (broker -> Iceberg bronze): %s records/s, %.1f MB/s\n", humanize.Count(int64(rep.BronzeDrainRate)), rep.BronzeDrainMBps)
	fmt.Fprintf(&b, "- maximum sustainable rate end to end (default trigger; every event in silver, published at 95 %% of the asked rate or more, p99 freshness and catch-up within 3 triggers + 5 s): %s events/s\n", humanize.Count(int64(rep.MaxSustainedRate)))
	if len(rep.Search) > 0 {
		b.WriteString("\nThe step-up search for that rate (30 s phases above the fastest phase kept up, until one is not):\n\n")
		writePhaseTable(&b, rep.Search)
	}
	b.WriteString("\n![freshness per phase](freshness.svg)\n")
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(b.String()), 0o644)
}

// writePhaseTable renders phases as a markdown table. CPU µs/event is the
// process's CPU time (replay server included) over the events published.
func writePhaseTable(b *strings.Builder, phases []phaseResult) {
	b.WriteString("| phase | asked ev/s | achieved ev/s | silver found / expected | p50 s | p95 s | p99 s | catch-up s | bronze commits | silver commits | data files | CPU s | CPU µs/event | peak RSS MiB | peak anon MiB | kept up |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range phases {
		perEvent := 0.0
		if p.Published > 0 {
			perEvent = p.CPUSeconds * 1e6 / float64(p.Published)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s / %s | %.2f | %.2f | %.2f | %.1f | %d | %d | %d | %.1f | %.0f | %.0f | %.0f | %v |\n",
			p.Phase.name(), humanize.Count(int64(p.Phase.Rate)), humanize.Count(int64(p.AchievedRate)), humanize.Count(p.FoundSilver), humanize.Count(p.Expected),
			p.FreshP50, p.FreshP95, p.FreshP99, p.CatchUpSeconds, p.BronzeCommits, p.SilverCommits, p.DataFiles, p.CPUSeconds, perEvent, p.PeakRSSMiB, p.PeakAnonMiB, yesNo(p.KeptUp, p.Error))
	}
}

func yesNo(ok bool, errText string) string {
	if ok {
		return "yes"
	}
	if errText != "" {
		return "no: " + errText
	}
	return "no"
}

// freshnessSVG draws p50/p95/p99 freshness per phase as grouped bars on a
// logarithmic axis (0.1 s to the largest p99), so sub-second phases stay
// readable beside phases that fell behind.
func freshnessSVG(phases []phaseResult) string {
	const w, h, left, bottom, top = 900, 420, 60, 130, 30
	const lo = 0.1
	maxV := 10.0
	for _, p := range phases {
		if p.FreshP99 > maxV {
			maxV = p.FreshP99
		}
	}
	maxV = math.Pow(10, math.Ceil(math.Log10(maxV)))
	plotH := float64(h - bottom - top)
	y := func(v float64) float64 {
		v = math.Max(v, lo)
		return float64(h-bottom) - plotH*math.Log10(v/lo)/math.Log10(maxV/lo)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">Silver freshness per phase: seconds from publish to silver commit (log scale)</text>`+"\n", left)
	for v := lo; v <= maxV*1.001; v *= 10 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.0f" y2="%.0f" stroke="#ddd"/><text x="%d" y="%.0f" text-anchor="end">%g s</text>`+"\n", left, w-10, y(v), y(v), left-5, y(v)+4, v)
	}
	if len(phases) == 0 {
		b.WriteString("</svg>\n")
		return b.String()
	}
	slot := float64(w-left-20) / float64(len(phases))
	colors := []string{"#6baed6", "#3182bd", "#08519c"}
	for i, p := range phases {
		x0 := float64(left) + slot*float64(i) + slot*0.15
		bw := slot * 0.7 / 3
		for j, v := range []float64{p.FreshP50, p.FreshP95, p.FreshP99} {
			if math.IsNaN(v) {
				continue
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x0+bw*float64(j), y(v), bw-1, float64(h-bottom)-y(v), colors[j])
		}
		label := p.Phase.name()
		if !p.KeptUp {
			label += " (fell behind)"
		}
		fmt.Fprintf(&b, `<text transform="translate(%.0f,%d) rotate(40)">%s</text>`+"\n", x0, h-bottom+12, label)
	}
	for i, name := range []string{"p50", "p95", "p99"} {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`, w-200+50*i, top, colors[i], w-186+50*i, top+9, name)
	}
	b.WriteString("\n</svg>\n")
	return b.String()
}
