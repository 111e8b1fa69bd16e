package bench

import (
	"fmt"
	"math"
	"strings"
)

// chartBar is one bar of a chart group: a value, or a lower bound when the
// event did not come within the wait (drawn in red, labelled).
type chartBar struct {
	name  string
	color string
	of    func(LengthResult) (v float64, bound bool)
}

// historySVG draws the restart figures by history length in two panels,
// seconds and MiB, as grouped bars on logarithmic axes (so a restart of a
// few seconds stays readable beside one that never became ready), with the
// targets as dashed lines.
func historySVG(rep HistoryReport) string {
	const w, h = 960, 440
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="60" y="18" font-size="14">Restart on a lake with history, by history length (log scales; red: not ready within the wait, a lower bound)</text>`+"\n")
	secBars := []chartBar{
		{"ready, every check passing", "#08519c", func(l LengthResult) (float64, bool) {
			if l.Restart.ReadySeconds < 0 {
				return l.Restart.WaitedSeconds, true
			}
			return l.Restart.ReadySeconds, false
		}},
		{"first refresh", "#3182bd", func(l LengthResult) (float64, bool) {
			if r := l.Restart.FirstRefresh; r != nil {
				return r.Seconds, false
			}
			return math.NaN(), false
		}},
		{"its checks", "#6baed6", func(l LengthResult) (float64, bool) {
			if r := l.Restart.FirstRefresh; r != nil {
				return finite(r.ChecksSeconds), false
			}
			return math.NaN(), false
		}},
		{"steady refresh", "#9ecae1", func(l LengthResult) (float64, bool) { return finite(l.Steady.SteadySeconds), false }},
	}
	memBars := []chartBar{
		{"VmHWM to ready", "#a63603", func(l LengthResult) (float64, bool) {
			return mibOf(l.Restart.HWMToReady), l.Restart.ReadySeconds < 0
		}},
		{"RssAnon peak", "#e6550d", func(l LengthResult) (float64, bool) { return mibOf(l.Restart.AnonToReady), false }},
		{"RssFile peak", "#fd8d3c", func(l LengthResult) (float64, bool) { return mibOf(l.Restart.FileToReady), false }},
		{"VmHWM steady", "#fdbe85", func(l LengthResult) (float64, bool) { return mibOf(l.Steady.HWMSteady), false }},
	}
	panel(&b, rep.Lengths, 60, 470, "seconds", "s", TargetReadySeconds, "ready target", secBars)
	panel(&b, rep.Lengths, 540, 950, "MiB", "MiB", float64(TargetHWMBytes>>20), "VmHWM target", memBars)
	b.WriteString("</svg>\n")
	return b.String()
}

func mibOf(n int64) float64 {
	if n <= 0 {
		return math.NaN()
	}
	return float64(n) / (1 << 20)
}

// panel draws one panel between x0 and x1.
func panel(b *strings.Builder, lengths []LengthResult, x0, x1 int, title, unit string, target float64, targetName string, bars []chartBar) {
	const top, bottom, h = 60, 80, 440
	lo, hi := math.Inf(1), target
	for _, l := range lengths {
		for _, bar := range bars {
			if v, _ := bar.of(l); !math.IsNaN(v) && v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	lo = math.Pow(10, math.Floor(math.Log10(math.Min(lo, target))))
	hi = math.Pow(10, math.Ceil(math.Log10(hi*1.01)))
	plotH := float64(h - bottom - top)
	y := func(v float64) float64 {
		v = math.Max(v, lo)
		return float64(h-bottom) - plotH*math.Log10(v/lo)/math.Log10(hi/lo)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12">%s</text>`+"\n", x0, top-22, title)
	for v := lo; v <= hi*1.001; v *= 10 {
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%g %s</text>`+"\n", x0, x1, y(v), y(v), x0-4, y(v)+4, v, unit)
	}
	fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#444" stroke-dasharray="5 3"/><text x="%d" y="%.1f" fill="#444">%s %g %s</text>`+"\n",
		x0, x1, y(target), y(target), x1-130, y(target)-4, targetName, target, unit)
	if len(lengths) > 0 {
		slot := float64(x1-x0) / float64(len(lengths))
		bw := slot * 0.7 / float64(len(bars))
		for i, l := range lengths {
			gx := float64(x0) + slot*float64(i) + slot*0.15
			for j, bar := range bars {
				v, bound := bar.of(l)
				if math.IsNaN(v) || v <= 0 {
					continue
				}
				color := bar.color
				if bound {
					color = "#cb181d"
				}
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", gx+bw*float64(j), y(v), bw-1, float64(h-bottom)-y(v), color)
				if bound {
					fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="9" fill="#cb181d">not ready</text>`+"\n", gx+bw*float64(j), y(v)-3)
				}
			}
			fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", gx+slot*0.35, h-bottom+16, daysLabel(l.Days))
		}
	}
	for j, bar := range bars {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			x0+(j%2)*200, h-bottom+34+(j/2)*16, bar.color, x0+(j%2)*200+14, h-bottom+43+(j/2)*16, bar.name)
	}
}
