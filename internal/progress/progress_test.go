package progress

import (
	"lakehouse/internal/syncbuf"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// writes records every Write separately, as a log would see them.
type writes struct {
	mu  sync.Mutex
	all []string
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.all = append(w.all, string(p))
	w.mu.Unlock()
	return len(p), nil
}

func (w *writes) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.all, "")
}

// fake returns a display on a fake writer and clock, without a timer: the
// test calls tick where the timer would.
func fake(terminal bool) (Display, *writes, *fakeClock) {
	w, c := &writes{}, newClock()
	return Display{W: w, Terminal: terminal, now: c.now, noTimer: true}, w, c
}

// TestPlainLinesRateLimited: updates every 100 ms for 35 s give a line at
// 10, 20 and 30 s and the last one, each a whole line in one Write.
func TestPlainLinesRateLimited(t *testing.T) {
	d, w, c := fake(false)
	r := d.Start(Task{Label: "load", Total: 350, Unit: "rows"})
	for range 350 {
		c.advance(100 * time.Millisecond)
		r.Add(1)
		r.tick()
	}
	r.Finish()
	want := []string{
		"load 100/350 rows (28%), 10/s, 0:10 elapsed, ETA 0:25\n",
		"load 200/350 rows (57%), 10/s, 0:20 elapsed, ETA 0:15\n",
		"load 300/350 rows (85%), 10/s, 0:30 elapsed, ETA 0:05\n",
		"load 350/350 rows (100%) in 0:35, 10/s\n",
	}
	if got := w.all; strings.Join(got, "") != strings.Join(want, "") || len(got) != len(want) {
		t.Fatalf("got %d writes %q, want %q", len(got), got, want)
	}
	if strings.Contains(w.String(), "\r") {
		t.Errorf("plain output has a carriage return: %q", w.String())
	}
}

// TestPlainTimerLineWithoutUpdates: stuck work still gets its line from
// the timer, at most every Every.
func TestPlainTimerLineWithoutUpdates(t *testing.T) {
	d, w, c := fake(false)
	d.Every = 5 * time.Second
	r := d.Start(Task{Label: "drain", Total: Unknown, Unit: "events"})
	r.Set(7)
	for range 12 {
		c.advance(time.Second)
		r.tick()
	}
	r.Finish()
	want := "drain 7 events, 0:05 elapsed\ndrain 7 events, 0:10 elapsed\ndrain 7 events in 0:12\n"
	if got := w.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestFinalLineAlwaysPrinted: work shorter than Every still ends with a
// line, in both modes, with its note; a bar's last draw says "in".
func TestFinalLineAlwaysPrinted(t *testing.T) {
	for _, tc := range []struct {
		terminal bool
		want     string // the last line, after the last '\r', without padding
	}{
		{false, "copy 3/3 files (100%) in 0:02, 1.5/s; all there"},
		{true, "copy [====================] 100% 3/3 files  1.5/s  in 0:02  all there"},
	} {
		d, w, c := fake(tc.terminal)
		r := d.Start(Task{Label: "copy", Total: 3, Unit: "files"})
		r.Set(0)
		c.advance(2 * time.Second)
		r.SetNote("all there")
		r.Add(3)
		r.Finish()
		out := w.String()
		last := out[strings.LastIndex(out, "\r")+1:]
		if got := strings.TrimRight(strings.TrimSuffix(last, "\n"), " "); got != tc.want || !strings.HasSuffix(out, "\n") {
			t.Errorf("terminal %v: last line %q, want %q (all: %q)", tc.terminal, last, tc.want, out)
		}
	}
}

// TestTerminalBar: redrawn in place with '\r', at most every redrawEvery on
// updates, padded over a longer previous line, ended with one '\n'.
func TestTerminalBar(t *testing.T) {
	d, w, c := fake(true)
	r := d.Start(Task{Label: "bronze", Total: 1000, Unit: "events"})
	r.SetNote("a long note that will go away")
	for range 100 { // 10 per redraw interval
		c.advance(10 * time.Millisecond)
		r.Add(10)
	}
	r.SetNote("")
	r.Finish()
	out := w.String()
	if !strings.HasPrefix(out, "\r") || !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("want \\r-redrawn lines ending in one \\n, got %q", out)
	}
	draws := strings.Split(strings.TrimSuffix(out, "\n"), "\r")[1:]
	if len(draws) > 12 { // the first, one per 100 ms of 1 s, the final
		t.Errorf("%d redraws in 1 s of updates every 10 ms, want at most 12: %q", len(draws), draws)
	}
	last := draws[len(draws)-1]
	if want := "bronze [====================] 100% 1,000/1,000 events  1,000/s  in 0:01"; strings.TrimRight(last, " ") != want {
		t.Errorf("final bar %q, want %q", last, want)
	}
	if prev := draws[len(draws)-2]; len(last) < len(prev) {
		t.Errorf("final bar (%d) does not cover the previous one (%d)", len(last), len(prev))
	}
}

// TestTerminalWidth: a bar line never reaches the last column; the note is
// cut first, then the bar narrows, then the rate and elapsed time go.
func TestTerminalWidth(t *testing.T) {
	for _, tc := range []struct {
		width int
		want  string
	}{
		{120, "prove: run 1: bronze [=========>          ]  49% 6,120/12,438 events  2,040/s  0:03  ETA 0:03  lag lag lag lag lag lag "},
		{80, "prove: run 1: bronze [==>   ]  49% 6,120/12,438 events  2,040/s  0:03  ETA 0:03"},
		{66, "prove: run 1: bronze [===>   ]  49% 6,120/12,438 events  ETA 0:03"},
	} {
		d, w, c := fake(true)
		d.Width = tc.width
		r := d.Start(Task{Label: "prove: run 1: bronze", Total: 12_438, Unit: "events"})
		r.SetNote(strings.Repeat("lag ", 30))
		r.Set(0)
		c.advance(3 * time.Second)
		r.Set(6_120)
		out := w.String()
		if last := out[strings.LastIndex(out, "\r")+1:]; last != tc.want {
			t.Errorf("%d columns: got %q, want %q", tc.width, last, tc.want)
		}
		r.Finish()
		for _, line := range strings.Split(strings.TrimSuffix(w.String(), "\n"), "\r")[1:] {
			if len(line) >= tc.width {
				t.Errorf("bar line of %d columns on a %d-column terminal: %q", len(line), tc.width, line)
			}
		}
	}
}

// TestUnknownTotal: a spinner and counts, no percentage, no ETA.
func TestUnknownTotal(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		d, w, c := fake(terminal)
		r := d.Start(Task{Label: "drain", Total: Unknown, Unit: "events"})
		for i := range 30 {
			c.advance(time.Second)
			r.Set(int64(100 * i))
			r.tick()
		}
		r.Finish()
		out := w.String()
		if strings.Contains(out, "%") || strings.Contains(out, "ETA") || !strings.Contains(out, "2,900 events") {
			t.Errorf("terminal %v: %q", terminal, out)
		}
		if terminal && !strings.ContainsAny(out, `|/-\`) {
			t.Errorf("terminal: no spinner in %q", out)
		}
	}
}

// TestUnknownWithoutCounts: a wait that only has a note to show (a drain:
// the lags) shows the elapsed time and the note, no count.
func TestUnknownWithoutCounts(t *testing.T) {
	for _, tc := range []struct {
		terminal bool
		want     string
		quick    string // a drain quicker than Every still has its last line
	}{
		{false, "drain 0:10 elapsed; silver lag 500\ndrain in 0:12; silver lag 0\n", "drain in 0:00; silver lag 0\n"},
		{true, "\rdrain /  0:01  silver lag 500\rdrain -  0:02  silver lag 500", "\rdrain in 0:00  silver lag 0\n"},
	} {
		d, w, c := fake(tc.terminal)
		r := d.Start(Task{Label: "drain", Total: Unknown})
		r.SetNote("silver lag 500")
		for range 12 {
			c.advance(time.Second)
			r.tick()
		}
		r.SetNote("silver lag 0")
		r.Finish()
		got := w.String()
		d, quick, c := fake(tc.terminal)
		r = d.Start(Task{Label: "drain", Total: Unknown})
		c.advance(100 * time.Millisecond)
		r.SetNote("silver lag 0")
		r.Finish()
		if quick.String() != tc.quick {
			t.Errorf("terminal %v: a quick drain wrote %q, want %q", tc.terminal, quick.String(), tc.quick)
		}
		if !tc.terminal && got != tc.want {
			t.Errorf("plain: got %q, want %q", got, tc.want)
		}
		if tc.terminal && (!strings.HasPrefix(got, tc.want) || !strings.HasSuffix(got, "\rdrain in 0:12  silver lag 0  \n")) {
			t.Errorf("terminal: got %q, want it to start %q and end with the final line", got, tc.want)
		}
	}
}

// TestZeroLengthWritesNothing: no output at all for a task of nothing, in
// either mode, whatever is called; nor for an Unknown task that ends with
// nothing done before anything was written.
func TestZeroLengthWritesNothing(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		d, w, c := fake(terminal)
		r := d.Start(Task{Label: "empty", Total: 0})
		for range 3 {
			c.advance(20 * time.Second)
			r.tick()
			r.Add(0)
			r.Set(0)
		}
		r.Finish()
		d, w2, c := fake(terminal)
		r = d.Start(Task{Label: "nothing to wait for", Total: Unknown})
		c.advance(100 * time.Millisecond)
		r.Finish()
		if got := w.String() + w2.String(); got != "" {
			t.Errorf("terminal %v: wrote %q", terminal, got)
		}
	}
	// A nil reporter and one on the zero Display do nothing either.
	var r *Reporter
	r.Set(1)
	r.Finish()
	z := Display{}.Start(Task{Label: "x", Total: 10})
	z.Add(5)
	z.Finish()
}

// TestDelay: work that ends within its Delay writes nothing; longer work
// shows from the Delay on.
func TestDelay(t *testing.T) {
	for _, tc := range []struct {
		run   time.Duration
		quiet bool
	}{{1500 * time.Millisecond, true}, {3 * time.Second, false}} {
		d, w, c := fake(true)
		r := d.Start(Task{Label: "verify", Total: 100, Unit: "rows", Delay: 2 * time.Second})
		for step := time.Duration(0); step < tc.run; step += 100 * time.Millisecond {
			c.advance(100 * time.Millisecond)
			r.Add(1)
		}
		r.Finish()
		if got := w.String(); (got == "") != tc.quiet {
			t.Errorf("run of %s: wrote %q, want quiet %v", tc.run, got, tc.quiet)
		}
	}
}

// TestTimed: done is the time since Start, out of Duration.
func TestTimed(t *testing.T) {
	d, w, c := fake(false)
	r := d.Start(Task{Label: "soak", Duration: 30 * time.Second})
	for range 30 {
		c.advance(time.Second)
		r.tick()
	}
	r.SetNote("sent 1,050")
	r.Finish()
	want := "soak 0:10 of 0:30 (33%), ETA 0:20\nsoak 0:20 of 0:30 (66%), ETA 0:10\nsoak 0:30 of 0:30 (100%), ETA 0:00\nsoak 0:30 of 0:30 (100%); sent 1,050\n"
	if got := w.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestRateFromBaseline: what was done before the first Set is not speed.
func TestRateFromBaseline(t *testing.T) {
	d, w, c := fake(false)
	r := d.Start(Task{Label: "bronze", Total: 20_000, Unit: "events"})
	c.advance(5 * time.Second) // the appliance starting
	r.Set(10_000)
	c.advance(4 * time.Second)
	r.Set(14_000)
	r.Finish()
	want := "bronze 14,000/20,000 events (70%) in 0:09, 1,000/s\n"
	if got := w.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestConcurrentWithTimer: updates from one goroutine while the real timer
// redraws (run with -race); nothing is written after Finish.
func TestConcurrentWithTimer(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		var buf syncbuf.Buffer
		r := Display{W: &buf, Terminal: terminal, Every: 10 * time.Millisecond}.Start(Task{Label: "x", Total: 1000})
		for i := range 1000 {
			r.Set(int64(i))
			r.SetNote("n")
			if i%100 == 0 {
				time.Sleep(tickBar / 10)
			}
		}
		r.Finish()
		n := buf.Len()
		time.Sleep(2 * tickBar)
		if buf.Len() != n {
			t.Errorf("terminal %v: output after Finish", terminal)
		}
	}
}

func TestClock(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{0, "0:00"}, {4 * time.Second, "0:04"}, {754 * time.Second, "12:34"}, {3723 * time.Second, "1:02:03"}} {
		if got := clock(tc.d); got != tc.want {
			t.Errorf("clock(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
