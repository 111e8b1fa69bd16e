package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/internal/bench"
)

// TestBenchHistorySmoke is `bench --history` in small: a lake of six
// hours at 80,000 events a day (20,000 events) built by this binary's demo,
// the appliance restarted on it (`run --no-ingest`, a child process),
// the questions through `query` against the independent truth, verify, the
// disk, and a steady phase of one refresh; then the same lake kept and
// measured again on a copy. It checks that every figure it claims was
// measured and every answer compared, never a timing.
func TestBenchHistorySmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts a small lake through child processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	bf := registerBenchFlags(fs)
	work := t.TempDir()
	if err := fs.Parse([]string{"--history", "--history-days", "0.25", "--history-events-per-day", "80000", "--history-recording", "500",
		"--history-refresh", "4s", "--history-steady", "1", "--history-ready-timeout", "2m", "--history-keep", work}); err != nil {
		t.Fatal(err)
	}
	cfg, probs := bf.history.Config(selfCommand, "TestBenchHistorySmoke", testWriter{t})
	if err := refused(probs); err != nil {
		t.Fatal(err)
	}
	if !cfg.Cold || !cfg.Keep || len(cfg.Days) != 1 || cfg.Days[0] != 0.25 || cfg.SteadyRefreshes != 1 {
		t.Fatalf("flags became %+v", cfg)
	}
	out := t.TempDir()
	if err := bench.RunHistoryCommand(ctx, bf.history.HistoryCommand, cfg, out, "TestBenchHistorySmoke", io.Discard); err != nil {
		t.Fatalf("history: %v", err)
	}
	rep, err := bench.ReadHistoryReport(out, "history")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Lengths) != 1 {
		t.Fatalf("%d lengths measured, want 1", len(rep.Lengths))
	}
	l := rep.Lengths[0]
	checkMeasured(t, l)
	if l.Build.Reused != "" || l.Build.Events != 20_000 || l.Build.ExitCode != 0 || l.Build.PeakRSS <= 0 {
		t.Errorf("build: %+v, want 40 loops of 500 events built by this run", l.Build)
	}
	if st := l.Build.Settle; st == nil || st.Seconds <= 0 || !strings.Contains(strings.Join(st.Jobs, ", "), "refresh") {
		t.Errorf("the build did not settle: %+v", st)
	}
	if st := l.Steady; st.SteadySeconds < 0 || len(st.Refreshes) != 2 || st.Sent == 0 || st.Appended == 0 || st.HWMSteady <= 0 {
		t.Errorf("steady phase not measured: %+v", st)
	}
	md, err := os.ReadFile(filepath.Join(out, "history.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| every query answer exact (every length) | 4 of 4 exact | yes |") || !strings.Contains(string(md), "(history.svg)") {
		t.Errorf("history.md lacks the answers' verdict or the chart:\n%s", md)
	}
	if fi, err := os.Stat(filepath.Join(out, "history.svg")); err != nil || fi.Size() == 0 {
		t.Errorf("history.svg: %v", err)
	}

	// Again on the kept lake: reused, measured on a copy, no steady phase.
	cfg.SteadyRefreshes = -1
	if err := bench.RunHistoryCommand(ctx, bf.history.HistoryCommand, cfg, out, "TestBenchHistorySmoke again", io.Discard); err != nil {
		t.Fatalf("history on the kept lake: %v", err)
	}
	if rep, err = bench.ReadHistoryReport(out, "history"); err != nil {
		t.Fatal(err)
	}
	again := rep.Lengths[0]
	checkMeasured(t, again)
	if !strings.HasPrefix(again.Build.Reused, "kept build of ") || again.Build.BuiltAt != l.Build.BuiltAt {
		t.Errorf("the kept lake was not reused: %+v", again.Build)
	}
	if !strings.Contains(strings.Join(again.Restart.Args, " "), ".measure") {
		t.Errorf("the kept lake was restarted in place, not on a copy: %v", again.Restart.Args)
	}
	if _, err := os.Stat(filepath.Join(work, "0.25d-80000", "broker.db")); err != nil {
		t.Errorf("the kept lake is gone: %v", err)
	}
}

// checkMeasured requires every figure of a length's restart, questions,
// verify and disk to have been measured.
func checkMeasured(t *testing.T, l bench.LengthResult) {
	t.Helper()
	if len(l.Errors) > 0 {
		t.Errorf("errors: %v", l.Errors)
	}
	r := l.Restart
	if r.ReadySeconds < 0 || r.ReadyzSeconds < 0 || r.FirstRefresh == nil || !r.FirstRefresh.Passed || len(r.FirstRefresh.Checks) != 5 {
		t.Errorf("restart: not ready with every check passing: %+v (first refresh %+v)", r, r.FirstRefresh)
	}
	if r.HWMToReady <= 0 || r.AnonToReady <= 0 || r.FileToReady <= 0 || r.CPUToReady <= 0 || r.HWMFirstRefresh <= 0 || r.HWMToReady < r.AnonToReady {
		t.Errorf("restart: memory not sampled: %+v", r)
	}
	if !hasJob(r.Runs, "refresh") {
		t.Errorf("restart: ops.runs has no refresh of the process: %+v", r.Runs)
	}
	if len(l.Answers) != 4 {
		t.Fatalf("%d questions asked, want 4", len(l.Answers))
	}
	for _, a := range l.Answers {
		if !a.Exact || len(a.Want) == 0 || a.Query.PeakRSS <= 0 {
			t.Errorf("question %q: exact %v, got %v, want %v, %s", a.Question, a.Exact, a.Got, a.Want, a.Err)
		}
	}
	if want := "rows=20001, offsets=20001"; len(l.Answers[0].Want) != 1 || l.Answers[0].Want[0] != want {
		t.Errorf("bronze's truth %v, want %s (20,000 events and the demo's last edit)", l.Answers[0].Want, want)
	}
	if l.Verify.ExitCode != 0 || l.Verify.PeakRSS <= 0 {
		t.Errorf("verify: %+v", l.Verify)
	}
	if l.Disk.Total <= 0 || l.Disk.Bytes("broker.db") <= 0 || l.Disk.Bytes("warehouse/bronze") <= 0 || l.Disk.Bytes("catalog.db") <= 0 {
		t.Errorf("disk: %+v", l.Disk)
	}
}

func hasJob(runs []bench.OpsRun, job string) bool {
	for _, r := range runs {
		if r.Job == job {
			return true
		}
	}
	return false
}
