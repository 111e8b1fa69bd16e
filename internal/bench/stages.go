package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// stages are the columns of the per-stage CPU split, in print order. Each
// is a value of the pprof label "component": the appliance's components
// (internal/appliance's start), "broker" (the embedded broker's group-commit loop),
// "replay" (the replay server playing Wikimedia's part), "bench" (the
// bench's own sampling of memory and polling of the appliance), "other" (the
// appliance's health rules and broker retention, and any other label) and
// "runtime" (no label: garbage collection, the scheduler, threads DuckDB
// starts outside Go).
var stages = []string{"ingest", "bronze", "dlq", "silver", "sessions", "marts", "broker", "replay", "bench", "other", "runtime"}

// labelKey is the pprof label that names a goroutine's component.
const labelKey = "component"

// stageOf maps a sample's component label to its stage: a label that
// names a stage is that stage, no label is runtime, any other (health,
// retention) is other.
func stageOf(label string) string {
	switch {
	case label == "":
		return "runtime"
	case label != "runtime" && slices.Contains(stages, label):
		return label
	default:
		return "other"
	}
}

// errNoSamples: the profile holds no CPU samples (the phase used less CPU
// than one sampling period), so there is nothing to split.
var errNoSamples = errors.New("no CPU samples")

// cpuProfile is a CPU profile of one phase, held in memory.
type cpuProfile struct {
	buf     bytes.Buffer
	err     error // why it did not start
	running bool
}

// startCPUProfile starts profiling into memory. Only one CPU profile can run
// in a process: when another runs (go test -cpuprofile, say) the returned
// profile records why and its stop returns nothing; it never fails the
// caller.
func startCPUProfile() *cpuProfile {
	p := &cpuProfile{}
	if err := pprof.StartCPUProfile(&p.buf); err != nil {
		p.err = fmt.Errorf("start CPU profile: %w", err)
		return p
	}
	p.running = true
	return p
}

// stop ends the profile and returns its bytes, or the reason there are
// none. Calling it again returns the same.
func (p *cpuProfile) stop() ([]byte, error) {
	if p.running {
		pprof.StopCPUProfile()
		p.running = false
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.buf.Bytes(), nil
}

// stageSplit sums the CPU time of a pprof CPU profile by stage and scales
// it so the stages add up to cpuSeconds (the rusage of the same interval);
// it returns CPU-µs per event by stage and the seconds the profile sampled.
// The scaling spreads the profile's sampling error (and the CPU of threads
// it does not see) over the stages in proportion to their samples.
func stageSplit(prof []byte, cpuSeconds float64, events int64) (map[string]float64, float64, error) {
	if events <= 0 || cpuSeconds <= 0 {
		return nil, 0, fmt.Errorf("split CPU by stage: %d events, %.3f CPU seconds", events, cpuSeconds)
	}
	p, err := profile.ParseData(prof)
	if err != nil {
		return nil, 0, fmt.Errorf("parse CPU profile: %w", err)
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, 0, fmt.Errorf("parse CPU profile: no cpu/nanoseconds sample type")
	}
	ns := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		label := ""
		if v := s.Label[labelKey]; len(v) > 0 {
			label = v[0]
		}
		ns[stageOf(label)] += s.Value[idx]
		total += s.Value[idx]
	}
	if total <= 0 {
		return nil, 0, errNoSamples
	}
	perEvent := cpuSeconds * 1e6 / float64(events) // µs
	out := make(map[string]float64, len(stages))
	for _, st := range stages {
		out[st] = perEvent * float64(ns[st]) / float64(total)
	}
	return out, float64(total) / 1e9, nil
}

// setStages fills the phase's per-stage split from its profile, or says why
// there is none (StageError); it never sets the phase's Error.
func (r *PhaseResult) setStages(prof []byte, profErr error) {
	if profErr != nil {
		r.StageError = profErr.Error()
		return
	}
	split, sampled, err := stageSplit(prof, r.CPUSeconds, r.Published)
	if err != nil {
		r.StageError = err.Error()
		return
	}
	r.StageCPU, r.StageSampled = split, sampled
}

// stageTotal is the sum of a split: the phase's CPU-µs per event.
func stageTotal(split map[string]float64) float64 {
	var t float64
	for _, st := range stages {
		t += split[st]
	}
	return t
}

// stageLine renders a phase's split compactly ("ingest 14.7 bronze 7.8 ...
// = 45.8"), leaving out stages under 0.05 µs/event.
func (r *PhaseResult) stageLine() string {
	if r.StageCPU == nil {
		why := r.StageError
		if why == "" {
			why = "not measured"
		}
		return fmt.Sprintf("no stage split (%s)", why)
	}
	var b strings.Builder
	b.WriteString("µs/event:")
	for _, st := range stages {
		if v := r.StageCPU[st]; v >= 0.05 {
			fmt.Fprintf(&b, " %s %.1f", st, v)
		}
	}
	fmt.Fprintf(&b, " = %.1f", stageTotal(r.StageCPU))
	return b.String()
}

// withLabel runs fn with the goroutine's pprof component label set to
// stage: goroutines fn starts (a server's, and in turn its connections')
// keep the label after fn returns.
func withLabel(stage string, fn func()) {
	pprof.Do(context.Background(), pprof.Labels(labelKey, stage), func(context.Context) { fn() })
}

// writeProfile writes prof into dir as name ("": none).
func writeProfile(dir, name string, prof []byte) error {
	if dir == "" || prof == nil {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, name), prof, 0o644); err != nil {
		return fmt.Errorf("write CPU profile: %w", err)
	}
	return nil
}
