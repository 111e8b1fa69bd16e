package bench

import (
	"encoding/json"
	"fmt"
	"lakehouse/internal/humanize"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Report is benchmarks/results.json.
type Report struct {
	When             time.Time     `json:"when"`
	Machine          string        `json:"machine"`
	Command          string        `json:"command"`
	Phases           []PhaseResult `json:"phases"`
	ProducerCeiling  float64       `json:"producer_ceiling_events_per_s"`
	BronzeDrainRate  float64       `json:"bronze_drain_records_per_s"`
	BronzeDrainMBps  float64       `json:"bronze_drain_mb_per_s"`
	MaxSustainedRate float64       `json:"max_sustained_rate"`
	// The stages measured alone: the process's CPU-µs (rusage) per event
	// over each measurement, and silver reading bronze's backlog.
	ProducerCPU       float64 `json:"producer_ceiling_cpu_us_per_event"`
	BronzeDrainCPU    float64 `json:"bronze_drain_cpu_us_per_record"`
	SilverBacklogRate float64 `json:"silver_backlog_rows_per_s"`
	SilverBacklogCPU  float64 `json:"silver_backlog_cpu_us_per_row"`
	// Search holds the phases of the step-up search for the highest
	// sustainable rate (default trigger, above the fastest phase kept up).
	Search []PhaseResult `json:"max_rate_search,omitempty"`
}

// originalFigures are the original pipeline's published results (45 s
// phases, 10 s trigger, local run): rate -> p95 freshness in seconds.
var originalFigures = []struct {
	rate, achieved, p95 float64
}{{100, 100, 20.2}, {1000, 1000, 20.2}, {5000, 5000, 20.6}, {15000, 9596, 21.0}}

// Machine describes this machine for a report.
func Machine() string {
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

// WriteReport writes results.json, results.md and freshness.svg of rep into dir.
func WriteReport(dir string, rep Report) error {
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
	b.WriteString("\nIts one-process producer topped out near 10,000 events/s.\n")
	writeStageTable(&b, append(slices.Clip(rep.Phases), rep.Search...))
	b.WriteString("\n## Separate measurements\n\n")
	b.WriteString("Each stage alone, over a fixed amount of work; CPU is the whole process's (rusage) over the measurement, per event. The bronze drain and the silver backlog share one backlog (`--drain-events`): the recording looped with fresh meta.ids every pass and its recorded event times (under a minute apart, so silver drops none as late or duplicate), appended to the broker, landed by bronze, then read by silver.\n\n")
	fmt.Fprintf(&b, "- producer ceiling, ingest alone (loopback SSE -> contract -> durable broker; the CPU includes the replay server feeding it): %s\n",
		alone(rep.ProducerCeiling, rep.ProducerCPU, "events/s", "", "event"))
	fmt.Fprintf(&b, "- bronze backlog drain (broker -> Iceberg bronze): %s\n",
		alone(rep.BronzeDrainRate, rep.BronzeDrainCPU, "records/s", fmt.Sprintf(", %.1f MB/s", rep.BronzeDrainMBps), "record"))
	fmt.Fprintf(&b, "- silver backlog (bronze -> parse, dedup, watermark -> silver.edits, as the appliance runs it): %s\n",
		alone(rep.SilverBacklogRate, rep.SilverBacklogCPU, "bronze rows/s", "", "row"))
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
func writePhaseTable(b *strings.Builder, phases []PhaseResult) {
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

// alone renders a stage measured alone: its rate, extra, and its CPU per
// item when measured (results.json from before CPU was measured has 0).
func alone(rate, cpu float64, unit, extra, item string) string {
	if rate <= 0 {
		return "not measured"
	}
	s := humanize.Count(int64(rate)) + " " + unit + extra
	if cpu > 0 {
		s += fmt.Sprintf(", %.1f CPU-µs/%s", cpu, item)
	}
	return s
}

// writeStageTable renders each phase's CPU per published event by stage
// (PhaseResult.StageCPU), with the total and the appliance's part (the
// total without the replay server and the bench's own polling).
func writeStageTable(b *strings.Builder, phases []PhaseResult) {
	b.WriteString("\n## CPU per event by stage\n\n")
	b.WriteString("CPU-µs per published event, every phase (the search's too). Each phase runs a CPU profile over the same interval as its CPU seconds; its samples are summed by the goroutines' pprof label `component`: the appliance's components (ingest, bronze, dlq, silver, sessions, marts; other is health and broker retention), broker (the embedded broker's group-commit loop), replay (the replay server playing Wikimedia's part), bench (the bench's own memory sampling and polling of the appliance) and runtime (no label: garbage collection, the scheduler, threads outside Go). The stages are scaled so they add up to the phase's rusage CPU (sampled / rusage shows the profile's share before scaling). Appliance is the total without replay and bench. `--profile DIR` keeps each phase's profile as cpu-<rate>-<trigger>.prof (`go tool pprof -tags`).\n\n")
	b.WriteString("| phase |")
	for _, st := range stages {
		b.WriteString(" " + st + " |")
	}
	b.WriteString(" total | appliance | sampled / rusage |\n|---|")
	b.WriteString(strings.Repeat("---|", len(stages)+3) + "\n")
	for _, p := range phases {
		fmt.Fprintf(b, "| %s |", p.Phase.name())
		if p.StageCPU == nil {
			why := p.StageError
			if why == "" {
				why = "not measured"
			}
			fmt.Fprintf(b, " no split: %s |%s\n", why, strings.Repeat(" |", len(stages)+2))
			continue
		}
		for _, st := range stages {
			fmt.Fprintf(b, " %.1f |", p.StageCPU[st])
		}
		total := stageTotal(p.StageCPU)
		fmt.Fprintf(b, " %.1f | %.1f | %.0f %% |\n", total, total-p.StageCPU["replay"]-p.StageCPU["bench"], 100*p.StageSampled/p.CPUSeconds)
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
func freshnessSVG(phases []PhaseResult) string {
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

// MissingFromSilver fails a run in which any phase lost an event on the way
// to silver.
func MissingFromSilver(rep Report) error {
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
