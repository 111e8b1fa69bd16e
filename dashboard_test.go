package main

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/dashboard"
	"lakehouse/internal/health"
	"lakehouse/internal/observe"
	"lakehouse/table"
)

// envArtifacts names the directory the browser tests write their
// screenshots to (default: lakehouse-artifacts under the system's temp
// directory); the tests log each file's path.
const envArtifacts = "LAKEHOUSE_ARTIFACTS"

// pageView is what the dashboard shows, read from its DOM.
type pageView struct {
	State   string `json:"state"`
	Updates int    `json:"updates"`
	Ready   string `json:"ready"`
	Banner  string `json:"banner"`
	Hops    map[string]struct {
		Count string `json:"count"`
		Level string `json:"level"`
	} `json:"hops"`
	Queries     []string          `json:"queries"`
	Tables      []string          `json:"tables"`
	Checks      []string          `json:"checks"`
	ChartPoints int               `json:"chart_points"`
	ChartLines  int               `json:"chart_lines"`
	Panels      map[string]string `json:"panels"` // panel id -> its rendered text
}

const readPage = `(() => {
  const all = (sel) => [...document.querySelectorAll(sel)];
  const banner = document.getElementById('banner');
  if (!document.body || !banner) return {state: 'not loaded'};
  return {
    state: document.body.dataset.state || '',
    updates: Number(document.body.dataset.updates || 0),
    ready: document.getElementById('ready-pill').textContent,
    banner: banner.hidden ? '' : banner.innerText,
    hops: Object.fromEntries(all('[data-hop]').map((e) => [e.dataset.hop, {count: e.querySelector('.count').textContent, level: e.dataset.level}])),
    queries: all('[data-query]').map((e) => e.dataset.query),
    tables: all('[data-table]').map((e) => e.dataset.table),
    checks: all('[data-check]').map((e) => e.dataset.check),
    chart_points: all('#fresh-chart svg circle').length,
    chart_lines: all('#fresh-chart svg path').length,
    panels: Object.fromEntries(all('main .panel').map((e) => [e.id, e.innerText])),
  };
})()`

// view reads the page, failing the test if it cannot.
func (p *page) view(t *testing.T) pageView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var v pageView
	if err := p.eval(ctx, readPage, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// waitView polls the page until cond holds for what it shows.
func (p *page) waitView(t *testing.T, timeout time.Duration, what string, cond func(pageView) bool) pageView {
	t.Helper()
	var v pageView
	waitFor(t, timeout, what, func() bool {
		v = p.view(t)
		return cond(v)
	})
	return v
}

// noProblems fails the test with every console error and uncaught
// exception the page produced since the last call.
func (p *page) noProblems(t *testing.T) {
	t.Helper()
	for _, pr := range p.takeProblems() {
		t.Errorf("the page logged an error: %s", pr)
	}
}

func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envArtifacts)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "lakehouse-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (p *page) saveScreenshot(t *testing.T, name string, width int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(artifactsDir(t), name)
	if err := p.screenshot(ctx, path, width); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := p.resize(ctx, 1280, 900); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

func openDashboard(t *testing.T, b *chromium, url string) *page {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := b.newPage(ctx, 1280, 900)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.navigate(ctx, url); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDashboard runs the whole appliance on a replay with contract
// violations, late events and canaries, refreshes the marts, and loads the
// dashboard in headless Chromium:
//   - live: the page loads with no console error or uncaught exception and
//     every panel shows the run: each hop's count is /api/status's, every
//     query, table and asset check is listed, the freshness chart has a
//     point per minute, the highlights, a warning and the settings appear;
//     it keeps updating every 2 s;
//   - not ready: once the source goes away, the page turns red with the
//     reason and marks the source's box;
//   - unreachable: once the appliance stops, the page says it cannot reach
//     it, keeps retrying, and throws nothing.
//
// Screenshots of each state go to $LAKEHOUSE_ARTIFACTS.
func TestDashboard(t *testing.T) {
	browser := startChromium(t)
	src := replay.New(replay.Config{Seed: 11, Restamp: true})
	src.Loops(replay.Generate(11, 600), 2)
	src.Violations(3)
	src.Canaries(2)
	a := startAppliance(t, src, func(_ *appliance.Config, r *health.Rules) { r.DisconnectedFor = time.Second })
	a.drained(t, src.Counts().OnTime)
	// Late events only once silver has a watermark: in silver's first batch
	// (no batch before it, so no watermark) they would be on time.
	src.Late(20, 2*time.Hour)
	c := src.Counts()
	a.drained(t, c.OnTime+c.Late)
	ctx := context.Background()
	if _, err := mustMarts(t, a.p).Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	const warning = "dashboard test: a warning the page lists"
	a.log.Warn(warning, "component", "test")
	waitFor(t, 10*time.Second, "ingest to count every event and the appliance to be ready", func() bool {
		o := a.observation(t)
		return o.Ingest != nil && o.Ingest.Seen == c.Events && o.Health.Ready
	})

	p := openDashboard(t, browser, a.base+"/")

	t.Run("live", func(t *testing.T) {
		var o observe.Observation
		v := p.waitView(t, 30*time.Second, "the page to show /api/status's hop counts", func(v pageView) bool {
			if v.State != "live" {
				return false
			}
			o = a.observation(t)
			for hop, want := range hopCounts(o) {
				if strings.ReplaceAll(v.Hops[hop].Count, ",", "") != strconv.FormatInt(want, 10) {
					return false
				}
			}
			return true
		})
		if o.Refresh == nil || len(o.Refresh.Checks) == 0 || len(o.Fresh.Series) == 0 || o.Hops.DLQ == 0 {
			t.Fatalf("inconclusive: the run has no refresh, checks, freshness or dead letters: %+v", o)
		}
		if v.Ready != "ready" {
			t.Errorf("readiness: got %q, want ready", v.Ready)
		}
		for hop, h := range v.Hops {
			if want := map[string]string{"dlq": "warn"}[hop]; want != "" && h.Level != want || want == "" && h.Level != "ok" {
				t.Errorf("hop %s marked %q in a healthy run", hop, h.Level)
			}
		}
		var names []string
		for _, q := range o.Queries {
			names = append(names, q.Name)
		}
		if got, want := strings.Join(v.Queries, ","), strings.Join(names, ","); got != want || len(names) != 4 {
			t.Errorf("queries listed: got %s, want %s", got, want)
		}
		var tables []string
		for _, tb := range o.Tables {
			tables = append(tables, tb.Name)
		}
		if got, want := strings.Join(slices.Sorted(slices.Values(v.Tables)), ","), strings.Join(slices.Sorted(slices.Values(tables)), ","); got != want {
			t.Errorf("tables listed: got %s, want %s", got, want)
		}
		if len(v.Checks) != len(o.Refresh.Checks) {
			t.Errorf("asset checks listed: got %v, want %d", v.Checks, len(o.Refresh.Checks))
		}
		if want := 2 * len(o.Fresh.Series); v.ChartPoints != want || v.ChartLines == 0 {
			t.Errorf("freshness chart: got %d points and %d lines, want %d points (p50 and p95 per minute) and lines",
				v.ChartPoints, v.ChartLines, want)
		}
		bronze := o.Queries[0].Totals
		silver := o.Queries[1].Totals
		for panel, wants := range map[string][]string{
			"panel-health":    {"Ready"},
			"panel-ingest":    {"connected", fmtInt(o.Ingest.Seen), fmtInt(o.Ingest.DLQ)},
			"panel-pipeline":  {"source", "broker", "dead-letter queue", "bronze", "silver", "sessions", "gold"},
			"panel-queries":   {"bronze", "silver", "sessions", fmtInt(bronze.RowsIn), fmtInt(silver.RowsOut), fmtInt(silver.Late)},
			"panel-freshness": {"p50", "p95", " old"},
			"panel-tables":    {table.Bronze, table.SilverEdits, table.EditorSessions, "gold.hot_pages"},
			"panel-refresh":   append(checkNames(o), o.Refresh.Highlights.Headline, o.Refresh.Checks[0].Message, o.Refresh.Highlights.Lists[0].Items[0]),
			"panel-log":       {warning, "WARN"},
			"panel-settings":  {o.Settings["data"], o.Settings["source"], "watermark"},
		} {
			for _, w := range wants {
				if !strings.Contains(v.Panels[panel], w) {
					t.Errorf("%s does not show %q:\n%s", panel, w, v.Panels[panel])
				}
			}
		}
		if silver.Late == 0 || bronze.RowsIn == 0 {
			t.Errorf("inconclusive: silver dropped no late rows (%d) or bronze read none (%d)", silver.Late, bronze.RowsIn)
		}
		p.waitView(t, 10*time.Second, "the page to update again", func(w pageView) bool { return w.Updates >= v.Updates+2 })
		p.noProblems(t)
		p.saveScreenshot(t, "dashboard.png", 1280)
		p.saveScreenshot(t, "dashboard-narrow.png", 420)
		p.noProblems(t)
	})

	t.Run("not ready", func(t *testing.T) {
		src.Close()
		v := p.waitView(t, 30*time.Second, "the page to say not ready, naming the source", func(v pageView) bool {
			return v.Ready == "not ready" && strings.Contains(v.Panels["panel-health"], "ingest: not connected to the source")
		})
		if got := v.Hops["source"].Level; got != "bad" {
			t.Errorf("the source's box is marked %q, want bad", got)
		}
		if !strings.Contains(v.Panels["panel-ingest"], "disconnected") {
			t.Errorf("the ingest panel does not say disconnected:\n%s", v.Panels["panel-ingest"])
		}
		p.noProblems(t)
		p.saveScreenshot(t, "dashboard-not-ready.png", 1280)
	})

	t.Run("unreachable", func(t *testing.T) {
		a.stop()
		v := p.waitView(t, 20*time.Second, "the page to say it cannot reach the appliance", func(v pageView) bool {
			return v.State == "unreachable" && strings.Contains(strings.ToLower(v.Banner), "cannot reach the appliance")
		})
		if v.Ready != "unreachable" {
			t.Errorf("readiness pill: got %q, want unreachable", v.Ready)
		}
		time.Sleep(4500 * time.Millisecond) // two more polls
		// The browser logs each refused fetch; anything else is a fault.
		fails := 0
		for _, pr := range p.takeProblems() {
			if strings.Contains(pr, "ERR_CONNECTION_REFUSED") && strings.HasPrefix(pr, "log (network)") {
				fails++
				continue
			}
			t.Errorf("the page logged an error: %s", pr)
		}
		if fails < 2 {
			t.Errorf("the page retried %d times in 4.5 s, want at least 2", fails)
		}
		p.saveScreenshot(t, "dashboard-unreachable.png", 1280)
	})
}

// TestDashboardMissingParts: the page draws an appliance with ingest off,
// no query, table or refresh yet and null freshness (the JSON the
// appliance serves in its first moments with --no-ingest) without an error,
// and says what is missing.
func TestDashboardMissingParts(t *testing.T) {
	browser := startChromium(t)
	now := time.Now()
	nan := observe.Float(math.NaN())
	o := observe.Observation{At: now, Started: now, Version: "devel",
		Health:   observe.Health{Reasons: []string{"starting: not evaluated yet"}, CheckedAt: now},
		Fresh:    observe.Freshness{Table: table.SilverEdits, NowS: nan, HourP50: nan, HourP95: nan},
		Settings: map[string]string{"source": "(no ingest)", "refresh": "5m0s"}}
	body, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"now_s":null`) || !strings.Contains(string(body), `"queries":null`) {
		t.Fatalf("inconclusive: the observation is not the sparse one wanted: %s", body)
	}
	p := openDashboard(t, browser, serveDashboard(t, func() []byte { return body }))
	v := p.waitView(t, 30*time.Second, "the page to draw the sparse status", func(v pageView) bool { return v.State == "live" && v.Updates >= 2 })
	for panel, want := range map[string]string{
		"panel-health":    "starting: not evaluated yet",
		"panel-ingest":    "Ingest is off",
		"panel-queries":   "No query has started yet",
		"panel-freshness": "no silver commit since start",
		"panel-tables":    "No table could be read",
		"panel-refresh":   "No marts refresh has run",
		"panel-log":       "No warnings or errors",
	} {
		if !strings.Contains(v.Panels[panel], want) {
			t.Errorf("%s does not say %q:\n%s", panel, want, v.Panels[panel])
		}
	}
	if v.Ready != "not ready" || v.Hops["source"].Level != "off" || v.ChartPoints != 0 {
		t.Errorf("got readiness %q, source box %q, %d chart points; want not ready, off, 0", v.Ready, v.Hops["source"].Level, v.ChartPoints)
	}
	p.noProblems(t)
	p.saveScreenshot(t, "dashboard-missing-parts.png", 1280)
}

// serveDashboard serves the dashboard's page with status as its
// /api/status on loopback and returns the page's URL.
func serveDashboard(t *testing.T, status func() []byte) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("GET /", dashboard.Handler())
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(status())
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

// hopCounts are the counts the pipeline diagram must show.
func hopCounts(o observe.Observation) map[string]int64 {
	h := o.Hops
	return map[string]int64{"source": h.SourceSeen, "broker": h.Broker, "dlq": h.DLQ, "bronze": h.Bronze,
		"silver": h.Silver, "sessions": h.Sessions, "gold": h.Gold}
}

func checkNames(o observe.Observation) []string {
	var out []string
	for _, c := range o.Refresh.Checks {
		out = append(out, c.Name)
	}
	return out
}

// fmtInt formats n as the page does (en-US grouping: 1,234,567).
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
