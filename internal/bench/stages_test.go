package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest/replay"
)

// profileOrSkip starts the helper's CPU profile, or skips the test when
// the process already profiles (go test -cpuprofile).
func profileOrSkip(t *testing.T) *cpuProfile {
	t.Helper()
	p := startCPUProfile()
	if p.err != nil {
		t.Skipf("cannot profile: another CPU profile runs in this process (go test -cpuprofile); the split is not measurable here: %v", p.err)
	}
	return p
}

// burn spins on the CPU for d.
func burn(d time.Duration) (x uint64) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 1e5; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

// TestStageSplitAttributesLabelledCPU: CPU spent under the silver label is
// silver's in the split, and the stages add up to the CPU they were
// scaled to.
func TestStageSplitAttributesLabelledCPU(t *testing.T) {
	prof := profileOrSkip(t)
	cpu0 := cpuTime()
	done := make(chan uint64)
	withLabel("silver", func() { go func() { done <- burn(400 * time.Millisecond) }() })
	<-done
	cpu := cpuTime() - cpu0
	data, err := prof.stop()
	if err != nil {
		t.Fatal(err)
	}
	const events = 1000
	split, sampled, err := stageSplit(data, cpu, events)
	if err != nil {
		t.Fatal(err)
	}
	if sampled <= 0 {
		t.Errorf("sampled %v CPU seconds, want some", sampled)
	}
	total := stageTotal(split)
	if want := cpu * 1e6 / events; math.Abs(total-want) > 1e-9*want {
		t.Errorf("stages add up to %v µs/event, want %v (the CPU they were scaled to)", total, want)
	}
	if share := split["silver"] / total; share < 0.6 {
		t.Errorf("silver holds %.0f %% of the CPU, want most of it: %v", 100*share, split)
	}
	for _, st := range []string{"ingest", "bronze", "replay", "broker"} {
		if split[st] != 0 {
			t.Errorf("%s holds %v µs/event; nothing ran under its label", st, split[st])
		}
	}
}

// TestStageSplitSeesReplayAndBroker: the replay server started under the
// replay label (as runPhase starts it) and the broker's commit loop are
// split out, not left in runtime: their goroutines carry the labels.
func TestStageSplitSeesReplayAndBroker(t *testing.T) {
	db, err := broker.Open(filepath.Join(t.TempDir(), "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.CreateTopic(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	src := replay.New(replay.Config{Seed: 42, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	src.Loops(replay.Generate(42, 2000), 200)
	prof := profileOrSkip(t)
	defer prof.stop()
	cpu0 := cpuTime()
	var url string
	withLabel("replay", func() { url, err = src.Start("127.0.0.1:0") })
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	// Read the stream flat out for a while, appending what arrives.
	rctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var batch []broker.Record
	var events int64
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		batch = append(batch, broker.Record{Topic: "t", Value: bytes.Clone(data), Timestamp: time.Now()})
		if len(batch) == 200 {
			if _, err := db.Append(ctx, broker.Batch{Records: batch}); err != nil {
				t.Fatal(err)
			}
			events += int64(len(batch))
			batch = nil
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	cpu := cpuTime() - cpu0
	data, err := prof.stop()
	if err != nil {
		t.Fatal(err)
	}
	if events == 0 {
		t.Fatal("read no events from the replay server")
	}
	split, _, err := stageSplit(data, cpu, events)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("split: %v", split)
	for _, st := range []string{"replay", "broker"} {
		if split[st] <= 0 {
			t.Errorf("%s holds no CPU: %v", st, split)
		}
	}
}

// TestNoStageSplit: a profile that cannot be had or read leaves the phase
// without a split, says why on its line, and does not fail it.
func TestNoStageSplit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prof   []byte
		profEr error
	}{
		{"empty", []byte{}, nil},
		{"garbage", []byte("not a profile"), nil},
		{"profiling busy", nil, errors.New("start CPU profile: cpu profiling already in use")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ph := Phase{Rate: 1000, Trigger: time.Second, Duration: time.Second}
			res := PhaseResult{Phase: ph, Published: 1000, Expected: 400, FoundSilver: 400, DistinctSilver: 400,
				AchievedRate: 1000, FreshP99: 1, CatchUpSeconds: 1, CPUSeconds: 0.5}
			res.setStages(tc.prof, tc.profEr)
			if res.StageCPU != nil || res.StageError == "" {
				t.Errorf("split %v, error %q; want no split and a reason", res.StageCPU, res.StageError)
			}
			var out strings.Builder
			res.judge(ph, &out)
			if res.Error != "" || !res.KeptUp {
				t.Errorf("phase error %q, kept up %v; want no error and kept up", res.Error, res.KeptUp)
			}
			if !strings.Contains(out.String(), "no stage split (") {
				t.Errorf("line %q does not say there is no stage split", out.String())
			}
		})
	}
}

// TestStageReport: the phase line and results.md carry the split; the
// appliance column is the total without the replay server and the bench.
func TestStageReport(t *testing.T) {
	ph := Phase{Rate: 10000, Trigger: time.Second, Duration: time.Second}
	res := PhaseResult{Phase: ph, Published: 10000, CPUSeconds: 0.458, StageSampled: 0.458,
		StageCPU: map[string]float64{"ingest": 14.7, "bronze": 7.8, "silver": 5.7, "sessions": 0.6, "broker": 2.5, "replay": 2.5, "bench": 1.0, "runtime": 11.0, "dlq": 0.01}}
	if got, want := res.stageLine(), "µs/event: ingest 14.7 bronze 7.8 silver 5.7 sessions 0.6 broker 2.5 replay 2.5 bench 1.0 runtime 11.0 = 45.8"; got != want {
		t.Errorf("stage line %q, want %q", got, want)
	}
	dir := t.TempDir()
	if err := WriteReport(dir, Report{Phases: []PhaseResult{res}, Search: []PhaseResult{{Phase: ph, StageError: "no CPU samples"}}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{"## CPU per event by stage", "| 14.7 | 7.8 | 0.0 | 5.7 | 0.6 | 0.0 | 2.5 | 2.5 | 1.0 | 0.0 | 11.0 | 45.8 | 42.3 | 100 % |", "no split: no CPU samples"} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
}

// TestCeilingSummary: the run's last line names each stage measured alone
// and the end-to-end maximum as a share of the slowest.
func TestCeilingSummary(t *testing.T) {
	rep := Report{ProducerCeiling: 90000, ProducerCPU: 17, BronzeDrainRate: 300000, BronzeDrainCPU: 5, SilverBacklogRate: 140000, SilverBacklogCPU: 12}
	for _, tc := range []struct {
		name string
		max  float64
		want string
	}{
		{"with max", 45000, "bench: stage ceilings: ingest alone 90,000 ev/s (17 CPU-µs/ev), bronze drain 300,000 (5 CPU-µs/ev), silver backlog 140,000 (12 CPU-µs/ev); end to end max sustained 45,000 = 50 % of the slowest stage alone"},
		{"without max", 0, "bench: stage ceilings: ingest alone 90,000 ev/s (17 CPU-µs/ev), bronze drain 300,000 (5 CPU-µs/ev), silver backlog 140,000 (12 CPU-µs/ev)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rep
			r.MaxSustainedRate = tc.max
			if got := ceilingSummary(r); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	if got := ceilingSummary(Report{MaxSustainedRate: 1000}); got != "" {
		t.Errorf("no ceilings measured: got %q, want no line", got)
	}
}
