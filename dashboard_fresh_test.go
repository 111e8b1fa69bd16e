package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"lakehouse/internal/observe"
	"lakehouse/table"
)

// chartLayout is where the freshness chart's text landed, read from the DOM.
type chartLayout struct {
	Viewport float64 `json:"viewport"`
	SVG      box     `json:"svg"`
	Texts    []struct {
		box
		Class string  `json:"cls"`
		Text  string  `json:"text"`
		Font  float64 `json:"font"` // rendered font size, px
	} `json:"texts"`
	Panel string `json:"panel"`
}

type box struct {
	L float64 `json:"l"`
	R float64 `json:"r"`
	T float64 `json:"t"`
	B float64 `json:"b"`
}

func (a box) overlaps(b box) bool { return a.L < b.R && b.L < a.R && a.T < b.B && b.T < a.B }

const readChart = `(() => {
  const svg = document.querySelector('#fresh-chart svg');
  if (!svg) return null;
  const r = (e) => { const b = e.getBoundingClientRect(); return {l: b.left, r: b.right, t: b.top, b: b.bottom}; };
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return {
    viewport: document.documentElement.clientWidth,
    svg: r(svg),
    texts: [...svg.querySelectorAll('text')].map((e) => Object.assign(r(e), {cls: e.getAttribute('class') || '', text: e.textContent,
      font: parseFloat(getComputedStyle(e).fontSize) * scale})),
    panel: document.getElementById('panel-freshness').innerText,
  };
})()`

// TestDashboardFreshnessReadable: the freshness panel charts the
// appliance's delay (intake to commit) and shows the events' age beside it,
// so a replay of events hours old (as the demo sends) reads hours old
// there and not in the chart; and at 1400 and 400 px wide every label of
// the chart is drawn whole, inside the chart and the window, at least 10 px
// high, with no two labels on top of each other, for delays of half a
// second and of an hour and a half.
func TestDashboardFreshnessReadable(t *testing.T) {
	browser := startChromium(t)
	var body atomic.Pointer[[]byte]
	serve := func(p50, p95 float64) observe.Observation {
		now := time.Now().UTC()
		o := observe.Observation{At: now, Started: now.Add(-2 * time.Hour), Version: "devel",
			Health:   observe.Health{Ready: true, CheckedAt: now},
			Settings: map[string]string{"source": "(replay)", "refresh": "5m0s"}}
		f := observe.Freshness{Table: table.SilverEdits, HourP50: observe.Float(p50), HourP95: observe.Float(p95),
			EventHourP50: 3*3600 + 180, NowS: 3*3600 + 185}
		for i := 59; i >= 0; i-- {
			f.Series = append(f.Series, observe.FreshPoint{Minute: now.Truncate(time.Minute).Add(-time.Duration(i) * time.Minute),
				Records: 1200, Rows: 700, P50: p50 * (1 + float64(i%7)/10), P95: p95 * (1 + float64(i%5)/10), EventP50: 3*3600 + 180})
		}
		o.Fresh = f
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		body.Store(&b)
		return o
	}
	serve(0.5, 1)
	p := openDashboard(t, browser, serveDashboard(t, func() []byte { return *body.Load() }))

	for _, c := range []struct {
		name     string
		p50, p95 float64
		width    int
		unit     string // every y label but 0 carries it
	}{
		{"half a second, 1400 px", 0.5, 1, 1400, " s"},
		{"half a second, 400 px", 0.5, 1, 400, " s"},
		{"an hour and a half, 1400 px", 3000, 5400, 1400, " h"},
		{"an hour and a half, 400 px", 3000, 5400, 400, " h"},
	} {
		t.Run(c.name, func(t *testing.T) {
			serve(c.p50, c.p95)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := p.resize(ctx, c.width, 900); err != nil {
				t.Fatal(err)
			}
			before := p.view(t).Updates
			p.waitView(t, 30*time.Second, "the page to redraw at the new width", func(v pageView) bool { return v.Updates >= before+2 })
			var l chartLayout
			if err := p.eval(ctx, readChart, &l); err != nil {
				t.Fatal(err)
			}
			if len(l.Texts) == 0 {
				t.Fatal("inconclusive: no chart text read")
			}
			var ys, xs []box
			for _, x := range l.Texts {
				what := fmt.Sprintf("label %q (%s) at [%.0f,%.0f]x[%.0f,%.0f]", x.Text, x.Class, x.L, x.R, x.T, x.B)
				if x.L < l.SVG.L-0.5 || x.R > l.SVG.R+0.5 || x.T < l.SVG.T-0.5 || x.B > l.SVG.B+0.5 {
					t.Errorf("%s lies outside the chart [%.0f,%.0f]x[%.0f,%.0f]", what, l.SVG.L, l.SVG.R, l.SVG.T, l.SVG.B)
				}
				if x.L < 0 || x.R > l.Viewport+0.5 {
					t.Errorf("%s lies outside the window (%.0f px)", what, l.Viewport)
				}
				if x.Font < 10 {
					t.Errorf("%s is drawn %.1f px high, want at least 10", what, x.Font)
				}
				switch x.Class {
				case "ytick":
					if x.Text != "0" && !strings.HasSuffix(x.Text, c.unit) {
						t.Errorf("%s: want a value in%s", what, c.unit)
					}
					ys = append(ys, x.box)
				case "xtick":
					xs = append(xs, x.box)
				}
			}
			if len(ys) != 5 || len(xs) < 3 {
				t.Errorf("got %d y labels and %d x labels, want 5 and at least 3", len(ys), len(xs))
			}
			for _, labels := range [][]box{ys, xs} {
				for i := range labels {
					for j := i + 1; j < len(labels); j++ {
						if labels[i].overlaps(labels[j]) {
							t.Errorf("two labels overlap: %+v and %+v", labels[i], labels[j])
						}
					}
				}
			}
			for _, want := range []string{"intake to commit", "3 h 3 min old", "event time"} {
				if !strings.Contains(l.Panel, want) {
					t.Errorf("the freshness panel does not show %q:\n%s", want, l.Panel)
				}
			}
			p.noProblems(t)
			p.saveScreenshot(t, fmt.Sprintf("dashboard-freshness-%.0fs-%dpx.png", c.p95, c.width), c.width)
		})
	}
}
