package bench

import (
	"context"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shLauncher is a "binary" that prints out whatever it is asked.
func shLauncher(out string) func(...string) *exec.Cmd {
	return func(...string) *exec.Cmd { return exec.Command("sh", "-c", `printf '%s' "$0"`, out) }
}

// TestAskComparesAnswer: an answer equal to the truth is exact; one that
// differs (a doubled count, as a file read twice gives), lacks a column or
// is not JSON is not, and says why.
func TestAskComparesAnswer(t *testing.T) {
	q := question{name: "rows", sql: "SELECT 1", cols: []string{"rows", "offsets"}, want: [][]any{{int64(2100001), int64(2100001)}}}
	log := filepath.Join(t.TempDir(), "q.log")
	for _, tc := range []struct {
		out   string
		exact bool
		err   string
	}{
		{`[{"rows": 2100001, "offsets": 2100001}]`, true, ""},
		{`[{"rows": 2948121, "offsets": 2100001}]`, false, ""},
		{`[]`, false, ""},
		{`[{"rows": 2100001}]`, false, `lack column "offsets"`},
		{`not json`, false, "not a JSON array"},
	} {
		a := ask(context.Background(), HistoryConfig{Launch: shLauncher(tc.out)}, "/nowhere", log, q)
		if a.Exact != tc.exact || !strings.Contains(a.Err, tc.err) {
			t.Errorf("answer %s: exact %v (want %v), error %q (want %q); got %v want %v", tc.out, a.Exact, tc.exact, a.Err, tc.err, a.Got, a.Want)
		}
		if a.Query.Seconds <= 0 || a.Query.ExitCode != 0 {
			t.Errorf("answer %s: the query's run not recorded: %+v", tc.out, a.Query)
		}
	}
	failing := ask(context.Background(), HistoryConfig{Launch: func(...string) *exec.Cmd { return exec.Command("sh", "-c", "echo boom >&2; exit 3") }}, "/nowhere", log, q)
	if failing.Exact || failing.Query.ExitCode != 3 || !strings.Contains(failing.Err, "boom") {
		t.Errorf("a failing query: %+v", failing)
	}
}

// TestEvaluateFailsLoudly: a wrong answer, a failed step, a restart that
// never became ready and figures that grow with history each become a
// failure of the run; a restart within every target passes.
func TestEvaluateFailsLoudly(t *testing.T) {
	good := func(days float64) LengthResult {
		return LengthResult{Days: days, Name: lengthName(days, 300_000),
			Restart: RestartResult{ReadySeconds: 5, WaitedSeconds: 5, HWMToReady: 200 << 20, AnonToReady: 60 << 20, FileToReady: 100 << 20, CPUToReady: 3,
				FirstRefresh: &RefreshRun{Seconds: 2, ChecksSeconds: 1, Passed: true}, HWMFirstRefresh: 200 << 20},
			Steady:  SteadyResult{SteadySeconds: 1.5, HWMSteady: 150 << 20},
			Answers: []Answer{{Question: "q", Exact: true}}}
	}
	rep := HistoryReport{Lengths: []LengthResult{good(1), good(28)}, SteadyRefreshes: 2}
	rep.evaluate()
	if len(rep.Failures) != 0 || len(rep.Missed) != 0 {
		t.Fatalf("a restart within every target failed: %v %v", rep.Failures, rep.Missed)
	}
	if len(rep.Targets) != 5 {
		t.Fatalf("%d targets, want 5 (ready, first/steady, VmHWM, answers, growth): %+v", len(rep.Targets), rep.Targets)
	}

	bad := good(28)
	bad.Restart.ReadySeconds, bad.Restart.WaitedSeconds, bad.Restart.NotReady = -1, 300, []string{"asset check bronze_offsets_match_broker failed"}
	bad.Restart.HWMToReady = 3 << 30
	bad.Answers = []Answer{{Question: "rows of bronze", Got: []string{"rows=2948121"}, Want: []string{"rows=2100001"}}}
	bad.Errors = []string{"verify: exit 1"}
	rep = HistoryReport{Lengths: []LengthResult{good(1), bad}, SteadyRefreshes: 2}
	rep.evaluate()
	all := strings.Join(rep.Failures, "\n")
	for _, want := range []string{"WRONG ANSWER to \"rows of bronze\"", "verify: exit 1"} {
		if !strings.Contains(all, want) {
			t.Errorf("failures lack %q:\n%s", want, all)
		}
	}
	missed := strings.Join(rep.Missed, "\n")
	for _, want := range []string{"target missed: ready with every check passing", "target missed: VmHWM under 300 MiB",
		"target missed: every query answer exact", "target missed: every restart figure at 28 days"} {
		if !strings.Contains(missed, want) {
			t.Errorf("missed targets lack %q:\n%s", want, missed)
		}
		if strings.Contains(all, want) {
			t.Errorf("a missed target %q made the run fail:\n%s", want, all)
		}
	}
}

// TestEvaluateWithoutSteadyPhase: with no steady phase asked for, the
// comparison with a steady-state refresh is not a target, and a run
// within the others passes.
func TestEvaluateWithoutSteadyPhase(t *testing.T) {
	l := LengthResult{Days: 1, Restart: RestartResult{ReadySeconds: 3, HWMToReady: 100 << 20, AnonToReady: 1, FileToReady: 1, CPUToReady: 1,
		FirstRefresh: &RefreshRun{Seconds: 1, ChecksSeconds: 0.5}, HWMFirstRefresh: 1}, Answers: []Answer{{Exact: true}}}
	long := l
	long.Days = 7
	rep := HistoryReport{Lengths: []LengthResult{l, long}}
	rep.evaluate()
	if len(rep.Failures) != 0 || len(rep.Targets) != 4 {
		t.Errorf("failures %v, targets %+v", rep.Failures, rep.Targets)
	}
	for _, g := range rep.Growth {
		if strings.Contains(g.Figure, "steady") {
			t.Errorf("growth of %q without a steady phase", g.Figure)
		}
	}
}

// TestHistoryReportFiles: the report of three lengths puts them side by
// side, round-trips through its JSON, and its chart is well-formed SVG.
func TestHistoryReportFiles(t *testing.T) {
	rep := HistoryReport{When: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC), Machine: "test", Command: "bench --history", EventsPerDay: 300_000}
	for _, d := range []float64{1, 7, 28} {
		l := LengthResult{Days: d, Name: lengthName(d, 300_000), Build: BuildRecord{Events: int64(d * 300_000), Seconds: d * 6},
			Disk:    DiskUsage{Total: int64(d) << 30, Components: []DiskComponent{{"broker.db", int64(d) << 29}}},
			Restart: RestartResult{ReadySeconds: -1, WaitedSeconds: 300, HWMToReady: int64(d) << 28, NotReady: []string{"asset check failed: a | b"}},
			Answers: []Answer{{Question: "q", Exact: d == 1, Got: []string{"rows=1"}, Want: []string{"rows=1"}}}}
		rep.Lengths = append(rep.Lengths, l)
	}
	rep.evaluate()
	dir := t.TempDir()
	if err := WriteHistoryReport(dir, "history", rep); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "history.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"|  | 1 day | 7 days | 28 days |", "| ready with every check passing | **not within 300 s** |", "| broker.db | 512.0 MiB | 3.5 GiB | 14.0 GiB |",
		"**WRONG**", "a \\| b", "![restart figures by history length](history.svg)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("history.md lacks %q:\n%s", want, md)
		}
	}
	back, err := ReadHistoryReport(dir, "history")
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Lengths) != 3 || back.Lengths[2].Restart.HWMToReady != 28<<28 || len(back.Failures) != len(rep.Failures) {
		t.Errorf("history.json did not round-trip: %+v", back)
	}
	svg, err := os.Open(filepath.Join(dir, "history.svg"))
	if err != nil {
		t.Fatal(err)
	}
	defer svg.Close()
	dec := xml.NewDecoder(svg)
	rects := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("history.svg is not well-formed: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	if rects < 3 {
		t.Errorf("history.svg has %d rects, want bars for the three lengths", rects)
	}
}

// TestBitsetCountsRepeats: each offset counts once; a repeat and a
// negative offset are reported, not lost.
func TestBitsetCountsRepeats(t *testing.T) {
	var b bitset
	for _, v := range []int64{0, 63, 64, 1 << 20, 5} {
		if b.set(v) {
			t.Errorf("%d reported as already set", v)
		}
	}
	if !b.set(63) || !b.set(1<<20) || !b.set(-1) {
		t.Error("a repeat or a negative offset was not reported")
	}
}

// TestStoredBetween: a refresh counts as steady only when the polls prove
// an event was stored after the previous refresh started and before it
// started.
func TestStoredBetween(t *testing.T) {
	polls := []appendedAt{{1, 10}, {3, 10}, {5, 12}, {7, 12}}
	for _, tc := range []struct {
		from, to float64
		want     bool
	}{{0, 4, false}, {2, 6, true}, {4, 6, false}, {0, 8, true}, {6, 9, false}, {8, 9, false}} {
		if got := storedBetween(polls, tc.from, tc.to); got != tc.want {
			t.Errorf("stored between %g and %g: %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}
