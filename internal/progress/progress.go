// Package progress shows how far long work has got, for a person waiting on
// it: a one-line bar redrawn in place with '\r' when the output is a
// terminal, otherwise a plain line at most every Display.Every (10 s by
// default) and one at the end.
//
// The package never decides whether its writer is a terminal and reads no
// flags or environment: the caller says so in Display.Terminal. A Reporter
// writes whole lines only (each plain line in one Write), ends its bar's line
// when it finishes, so that later output starts on a fresh line, and writes
// nothing at all after Finish, nor for a task of zero length. Write errors
// are ignored: progress is advisory and never fails the work it describes.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"lakehouse/internal/humanize"
)

// Defaults of a Display.
const (
	// DefaultEvery spaces the plain lines.
	DefaultEvery = 10 * time.Second
	// DefaultWidth is the terminal width assumed when Display.Width is 0.
	DefaultWidth = 80
)

// Unknown is the Total of a task whose size is not known in advance (a
// drain that waits for "nothing left"): it shows a spinner, the count once
// one is Set or Added, never a percentage or an ETA.
const Unknown = -1

const (
	redrawEvery = 100 * time.Millisecond // a terminal bar is redrawn at most this often on updates
	tickBar     = 250 * time.Millisecond // and this often without them (spinner, elapsed time)
	tickPlain   = time.Second            // a due plain line is printed at the latest this late
	barCells    = 20                     // cells of a bar, at most
	minCells    = 6                      // and at least, however narrow the terminal
	// minRateSpan: no rate (nor ETA) is shown before the work has run this
	// long; a rate over less is noise.
	minRateSpan = time.Second
)

// Display is where reporters draw. The zero Display draws nothing.
type Display struct {
	W io.Writer
	// Terminal: W is a terminal, so a bar is redrawn in place with '\r'.
	// Otherwise plain lines are written.
	Terminal bool
	// Width is the terminal's width in columns (0: DefaultWidth). A bar
	// line is cut to fit, since a wrapped line cannot be redrawn in place.
	Width int
	// Every spaces the plain lines (0: DefaultEvery).
	Every time.Duration

	// Test seams: the clock, and the redraw timer (noTimer: none; the
	// test calls tick).
	now     func() time.Time
	noTimer bool
}

// Task describes one piece of work.
type Task struct {
	// Label starts every line, for example "prove: run 1: bronze".
	Label string
	// Total is the size of the work in Unit (Unknown, or any negative
	// value: not known). A task with Total 0 and no Duration writes nothing.
	Total int64
	// Unit follows the counts: "events" gives "1,200/5,000 events".
	Unit string
	// Duration makes a timed task: done is the time since Start, out of
	// Duration, shown as times; Total and Unit are ignored and no rate is
	// shown.
	Duration time.Duration
	// Delay: nothing is written until the task has run this long, the
	// last line included. For work that is usually quick.
	Delay time.Duration
}

// Reporter reports one task. Its methods may be called from one goroutine
// while its own timer redraws; a nil or finished Reporter ignores them.
type Reporter struct {
	d    Display
	t    Task
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	off      bool // zero-length task or no writer: never writes
	finished bool
	start    time.Time
	count    int64
	based    bool // base and baseAt are set
	base     int64
	baseAt   time.Time
	note     string
	drawn    bool      // something was written
	lastDraw time.Time // last bar redraw or plain line
	lastLen  int       // runes of the bar line on screen
	spin     int
}

// Start begins reporting t on d. The caller must call Finish.
func (d Display) Start(t Task) *Reporter {
	if d.now == nil {
		d.now = time.Now
	}
	if d.Every <= 0 {
		d.Every = DefaultEvery
	}
	if d.Width <= 0 {
		d.Width = DefaultWidth
	}
	r := &Reporter{d: d, t: t, start: d.now()}
	r.lastDraw = r.start
	if d.W == nil || t.Duration <= 0 && t.Total == 0 {
		r.off = true
		return r
	}
	if t.Duration > 0 {
		r.based, r.baseAt = true, r.start
	}
	if !d.noTimer {
		every := tickPlain
		if d.Terminal {
			every = tickBar
		}
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.timer(every)
	}
	return r
}

func (r *Reporter) timer(every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.tick()
		}
	}
}

// tick is the timer: it redraws the bar (spinner, elapsed time) or prints a
// plain line that is due although the work did not move.
func (r *Reporter) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.off || r.finished {
		return
	}
	r.spin++
	r.maybeDraw(true)
}

// Set records that done units of the work are done. The first value set
// is the baseline of the rate: work done before the reporter started (a
// backlog partly landed before a restart) does not count as speed.
func (r *Reporter) Set(done int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.off || r.finished {
		return
	}
	if !r.based {
		r.based, r.base, r.baseAt = true, done, r.d.now()
	}
	r.count = done
	r.maybeDraw(false)
}

// Add records n more units done.
func (r *Reporter) Add(n int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.off || r.finished {
		return
	}
	if !r.based {
		r.based, r.base, r.baseAt = true, r.count, r.start
	}
	r.count += n
	r.maybeDraw(false)
}

// SetNote sets the text shown after the figures (the lags of a drain, the
// last sample of a soak).
func (r *Reporter) SetNote(note string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note = note
}

// Finish writes the last line, ends the bar's line, stops the timer and
// makes later calls do nothing. It writes nothing for a zero-length task
// (an Unknown task that was never Set, Added or given a note, and wrote
// nothing, is one too) or one that finished within its Delay.
func (r *Reporter) Finish() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return
	}
	r.finished = true
	now := r.d.now()
	empty := r.t.Duration <= 0 && r.t.Total < 0 && !r.based && r.note == "" && !r.drawn
	if !r.off && !empty && now.Sub(r.start) >= r.t.Delay {
		if r.d.Terminal {
			r.drawBar(now, true)
			_, _ = io.WriteString(r.d.W, "\n")
		} else {
			_, _ = io.WriteString(r.d.W, r.plain(now, true)+"\n")
		}
	}
	r.mu.Unlock()
	if r.stop != nil {
		close(r.stop)
		<-r.done
	}
}

// maybeDraw redraws the bar or prints a plain line if one is due.
func (r *Reporter) maybeDraw(fromTimer bool) {
	now := r.d.now()
	if now.Sub(r.start) < r.t.Delay {
		return
	}
	since := now.Sub(r.lastDraw)
	if r.d.Terminal {
		if fromTimer || since >= redrawEvery || !r.drawn {
			r.drawBar(now, false)
		}
		return
	}
	if since >= r.d.Every {
		_, _ = io.WriteString(r.d.W, r.plain(now, false)+"\n")
		r.drawn, r.lastDraw = true, now
	}
}

// drawBar writes '\r' and the bar line, padded over the previous one.
func (r *Reporter) drawBar(now time.Time, final bool) {
	line := r.bar(now, final)
	if n := r.d.Width - 1; utf8.RuneCountInString(line) > n { // the last column would wrap on some terminals
		line = string([]rune(line)[:n])
	}
	n := utf8.RuneCountInString(line)
	pad := ""
	if n < r.lastLen {
		pad = strings.Repeat(" ", r.lastLen-n)
	}
	_, _ = io.WriteString(r.d.W, "\r"+line+pad)
	r.drawn, r.lastDraw, r.lastLen = true, now, n
}

// figures is what both forms show.
type figures struct {
	elapsed time.Duration
	pct     int     // -1: no percentage
	rate    float64 // units/s; 0: none shown
	eta     time.Duration
	hasETA  bool
}

func (r *Reporter) figures(now time.Time) figures {
	f := figures{elapsed: now.Sub(r.start), pct: -1}
	if r.t.Duration > 0 {
		done := min(f.elapsed, r.t.Duration)
		f.pct = int(done * 100 / r.t.Duration)
		f.eta, f.hasETA = r.t.Duration-done, true
		return f
	}
	if span := now.Sub(r.baseAt); r.based && span >= minRateSpan && r.count > r.base {
		f.rate = float64(r.count-r.base) / span.Seconds()
	}
	if r.t.Total > 0 {
		f.pct = int(min(100, max(0, r.count*100/r.t.Total)))
		if f.rate > 0 {
			left := max(0, r.t.Total-r.count)
			f.eta, f.hasETA = time.Duration(float64(left)/f.rate*float64(time.Second)), true
		}
	}
	return f
}

// plain is one plain line, for example
//
//	prove: run 1: bronze 6,120/18,000 events (34%), 2,040/s, 0:03 elapsed, ETA 0:06; note
//	prove: run 1: bronze 18,000/18,000 events (100%) in 0:09, 2,000/s; note
func (r *Reporter) plain(now time.Time, final bool) string {
	f := r.figures(now)
	head := ""
	switch {
	case r.t.Duration > 0:
		head = fmt.Sprintf("%s of %s (%d%%)", clock(min(f.elapsed, r.t.Duration)), clock(r.t.Duration), f.pct)
	case r.hasCounts():
		head = r.counts()
		if f.pct >= 0 {
			head += fmt.Sprintf(" (%d%%)", f.pct)
		}
	}
	if final && r.t.Duration <= 0 {
		head = strings.TrimSpace(head + " in " + clock(f.elapsed))
	}
	var parts []string
	if head != "" {
		parts = append(parts, head)
	}
	if f.rate > 0 {
		parts = append(parts, r.rate(f.rate))
	}
	if !final && r.t.Duration <= 0 {
		parts = append(parts, clock(f.elapsed)+" elapsed")
	}
	if !final && f.hasETA {
		parts = append(parts, "ETA "+clock(f.eta))
	}
	line := r.t.Label + " " + strings.Join(parts, ", ")
	if r.note != "" {
		line += "; " + r.note
	}
	return line
}

// bar is the terminal line, for example
//
//	prove: run 1: bronze [======>             ]  34% 6,120/18,000 events  2,040/s  0:03  ETA 0:06  note
//	prove: run 4: drain |  0:12  note
//
// On a narrow terminal the note is cut first, then the bar narrows (to
// minCells), then the rate and the elapsed time are left out.
func (r *Reporter) bar(now time.Time, final bool) string {
	f := r.figures(now)
	var count, rate, elapsed, eta string
	switch {
	case r.t.Duration > 0:
		count = fmt.Sprintf("%s/%s", clock(min(f.elapsed, r.t.Duration)), clock(r.t.Duration))
	case r.hasCounts():
		count = r.counts()
	}
	if f.rate > 0 {
		rate = r.rate(f.rate)
	}
	switch {
	case final && r.t.Duration <= 0:
		elapsed = "in " + clock(f.elapsed)
	case !final && r.t.Duration <= 0:
		elapsed = clock(f.elapsed)
	}
	if !final && f.hasETA {
		eta = "ETA " + clock(f.eta)
	}
	join := func(fields ...string) string {
		var parts []string
		for _, p := range fields {
			if p != "" {
				parts = append(parts, p)
			}
		}
		return strings.Join(parts, "  ")
	}
	room := r.d.Width - 1 - utf8.RuneCountInString(r.t.Label) - len(" [] 100% ") - minCells
	figs := join(count, rate, elapsed, eta)
	for _, drop := range []*string{&rate, &elapsed} {
		if utf8.RuneCountInString(figs) <= room {
			break
		}
		*drop = ""
		figs = join(count, rate, elapsed, eta)
	}
	head := ""
	switch {
	case f.pct >= 0:
		cells := max(minCells, min(barCells, minCells+room-utf8.RuneCountInString(figs)))
		filled := f.pct * cells / 100
		bar := strings.Repeat("=", filled)
		if filled < cells {
			bar += ">" + strings.Repeat(" ", cells-filled-1)
		}
		head = fmt.Sprintf("[%s] %3d%% ", bar, f.pct)
	case !final:
		head = string(`|/-\`[r.spin%4]) + "  "
	}
	line := r.t.Label + " " + head + figs
	if r.note != "" {
		line += "  " + r.note
	}
	return line
}

// hasCounts: there is a count to show (a known total, or something done).
func (r *Reporter) hasCounts() bool { return r.t.Total > 0 || r.based }

// counts is "done/total unit" or, for an Unknown total, "done unit".
func (r *Reporter) counts() string {
	s := humanize.Count(r.count)
	if r.t.Total > 0 {
		s += "/" + humanize.Count(r.t.Total)
	}
	if r.t.Unit != "" {
		s += " " + r.t.Unit
	}
	return s
}

// rate is "2,040/s" (the unit is beside the count already).
func (r *Reporter) rate(perSec float64) string {
	if perSec < 10 {
		return fmt.Sprintf("%.1f/s", perSec)
	}
	return humanize.Count(int64(perSec+0.5)) + "/s"
}

// clock formats d as m:ss, or h:mm:ss from an hour.
func clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s < 3600 {
		return fmt.Sprintf("%d:%02d", s/60, s%60)
	}
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}
