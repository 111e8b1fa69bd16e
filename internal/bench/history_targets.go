package bench

import (
	"fmt"
	"math"
)

// The targets of a lake weeks old (issue 49), checked at the longest
// history measured: restart and answers that do not depend on how much
// history there is.
const (
	TargetReadySeconds  = 15.0      // ready with every check passing, after a restart
	TargetFirstOverStdy = 2.0       // first refresh after a restart / a steady-state refresh
	TargetHWMBytes      = 300 << 20 // VmHWM from start to ready, file-backed pages included
	TargetGrowth        = 1.5       // a figure at the longest history / at the shortest
)

// TargetVerdict is one target checked.
type TargetVerdict struct {
	Target string `json:"target"`
	Value  string `json:"value"`
	Met    bool   `json:"met"`
}

// GrowthFigure is one figure at the shortest and the longest history.
type GrowthFigure struct {
	Figure   string  `json:"figure"`
	Unit     string  `json:"unit"`
	Shortest float64 `json:"shortest"`
	Longest  float64 `json:"longest"`
	Ratio    float64 `json:"ratio"` // -1: not measured at one of them
	Met      bool    `json:"met"`
}

// growthFigures are the figures the growth target applies to: what a
// restart costs. verify and the queries read all of history by design (an
// explicit, separate operation) and are shown, not held to it; disk grows
// with history by nature.
var growthFigures = []struct {
	name, unit string
	of         func(LengthResult) float64
	steady     bool // measured by the steady phase
}{
	{"ready with every check passing", "s", func(l LengthResult) float64 { return l.Restart.ReadySeconds }, false},
	{"VmHWM, start to ready", "MiB", func(l LengthResult) float64 { return mibOrMissing(l.Restart.HWMToReady, l.Restart.ReadySeconds) }, false},
	{"peak RssAnon, start to ready", "MiB", func(l LengthResult) float64 { return mibOrMissing(l.Restart.AnonToReady, l.Restart.ReadySeconds) }, false},
	{"peak RssFile, start to ready", "MiB", func(l LengthResult) float64 { return mibOrMissing(l.Restart.FileToReady, l.Restart.ReadySeconds) }, false},
	{"CPU, start to ready", "s", func(l LengthResult) float64 {
		if l.Restart.ReadySeconds < 0 {
			return -1
		}
		return l.Restart.CPUToReady
	}, false},
	{"first refresh after the restart", "s", func(l LengthResult) float64 {
		if r := l.Restart.FirstRefresh; r != nil {
			return r.Seconds
		}
		return -1
	}, false},
	{"checks of the first refresh", "s", func(l LengthResult) float64 {
		if r := l.Restart.FirstRefresh; r != nil {
			return r.ChecksSeconds
		}
		return -1
	}, false},
	{"VmHWM at the end of the first refresh", "MiB", func(l LengthResult) float64 {
		return mibOrMissing(l.Restart.HWMFirstRefresh, boolSeconds(l.Restart.FirstRefresh != nil))
	}, false},
	{"steady-state refresh", "s", func(l LengthResult) float64 { return l.Steady.SteadySeconds }, true},
	{"VmHWM over the steady refreshes", "MiB", func(l LengthResult) float64 {
		return mibOrMissing(l.Steady.HWMSteady, l.Steady.SteadySeconds)
	}, true},
}

func mibOrMissing(b int64, when float64) float64 {
	if when < 0 || b <= 0 {
		return -1
	}
	return float64(b) / (1 << 20)
}

func boolSeconds(ok bool) float64 {
	if ok {
		return 0
	}
	return -1
}

// evaluate checks the targets, computes the growth figures and lists what
// makes the run fail.
func (r *HistoryReport) evaluate() {
	r.Targets, r.Growth, r.Failures, r.Missed = nil, nil, nil, nil
	if len(r.Lengths) == 0 {
		return
	}
	short, long := r.Lengths[0], r.Lengths[0]
	for _, l := range r.Lengths {
		if l.Days < short.Days {
			short = l
		}
		if l.Days > long.Days {
			long = l
		}
	}
	at := fmt.Sprintf(" (at %g days)", long.Days)
	rs := long.Restart
	ready := TargetVerdict{Target: fmt.Sprintf("ready with every check passing within %g s of a restart", TargetReadySeconds) + at,
		Met: rs.ReadySeconds >= 0 && rs.ReadySeconds <= TargetReadySeconds}
	if rs.ReadySeconds >= 0 {
		ready.Value = fmt.Sprintf("%.1f s", rs.ReadySeconds)
	} else {
		ready.Value = fmt.Sprintf("not ready within %.0f s", rs.WaitedSeconds)
	}
	ratio := TargetVerdict{Target: fmt.Sprintf("first refresh after a restart within %gx a steady-state refresh", TargetFirstOverStdy) + at, Value: "not measured"}
	if rs.FirstRefresh != nil && long.Steady.SteadySeconds > 0 {
		q := rs.FirstRefresh.Seconds / long.Steady.SteadySeconds
		ratio.Value = fmt.Sprintf("%.1f s / %.1f s = %.2fx", rs.FirstRefresh.Seconds, long.Steady.SteadySeconds, q)
		ratio.Met = q <= TargetFirstOverStdy
	}
	hwm := TargetVerdict{Target: fmt.Sprintf("VmHWM under %d MiB from start to ready, file-backed pages included", TargetHWMBytes>>20) + at,
		Value: fmt.Sprintf("%.0f MiB", float64(rs.HWMToReady)/(1<<20)), Met: rs.ReadySeconds >= 0 && rs.HWMToReady < TargetHWMBytes}
	if rs.ReadySeconds < 0 {
		hwm.Value += fmt.Sprintf(" by %.0f s, never ready", rs.WaitedSeconds)
	}
	exact, asked := 0, 0
	for _, l := range r.Lengths {
		for _, a := range l.Answers {
			asked++
			if a.Exact {
				exact++
			}
		}
	}
	answers := TargetVerdict{Target: "every query answer exact (every length)", Value: fmt.Sprintf("%d of %d exact", exact, asked),
		Met: asked > 0 && exact == asked}
	r.Targets = []TargetVerdict{ready, ratio, hwm, answers}
	steady := r.SteadyRefreshes > 0
	if !steady { // no steady phase was asked for: nothing to compare with
		r.Targets = []TargetVerdict{ready, hwm, answers}
	}

	grew := 0
	for _, g := range growthFigures {
		if g.steady && !steady {
			continue
		}
		f := GrowthFigure{Figure: g.name, Unit: g.unit, Shortest: g.of(short), Longest: g.of(long), Ratio: -1}
		if f.Shortest > 0 && f.Longest >= 0 {
			f.Ratio = f.Longest / f.Shortest
			f.Met = f.Ratio <= TargetGrowth
		}
		if !f.Met {
			grew++
		}
		r.Growth = append(r.Growth, f)
	}
	if len(r.Lengths) > 1 {
		r.Targets = append(r.Targets, TargetVerdict{
			Target: fmt.Sprintf("every restart figure at %g days within %gx its value at %g days", long.Days, TargetGrowth, short.Days),
			Value:  fmt.Sprintf("%d of %d within", len(r.Growth)-grew, len(r.Growth)), Met: grew == 0})
	}

	r.Disk = nil
	if r.DiskPlan.FSBytes > 0 && long.Disk.Total > 0 && r.EventsPerDay > 0 {
		p := projectDisk(long.Disk, long.Days, r.EventsPerDay, r.DiskPlan)
		r.Disk = &p
		r.Targets = append(r.Targets, diskVerdict(p))
	}

	for _, l := range r.Lengths {
		for _, a := range l.Answers {
			if !a.Exact {
				r.Failures = append(r.Failures, fmt.Sprintf("%s: WRONG ANSWER to %q: got %v, want %v %s", l.Name, a.Question, a.Got, a.Want, a.Err))
			}
		}
		for _, e := range l.Errors {
			r.Failures = append(r.Failures, l.Name+": "+e)
		}
	}
	for _, t := range r.Targets {
		if !t.Met {
			r.Missed = append(r.Missed, fmt.Sprintf("target missed: %s: %s", t.Target, t.Value))
		}
	}
}

// finite maps the -1 of "not measured" and NaN to NaN, for charts.
func finite(v float64) float64 {
	if v < 0 || math.IsNaN(v) {
		return math.NaN()
	}
	return v
}
