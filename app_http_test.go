package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/health"
	"lakehouse/internal/observe"
	"lakehouse/internal/telemetry"
	"lakehouse/marts"
)

// testAppliance is the whole appliance in this process (the code path of
// `run`: ingest over real SSE from a replay server, the streams, the marts,
// health and the HTTP surface on a free loopback port).
type testAppliance struct {
	p      *appliance.Appliance
	log    *slog.Logger // the appliance's
	src    *replay.Server
	base   string // http://127.0.0.1:port
	cancel context.CancelFunc
	errc   chan error
}

// startAppliance starts the appliance on a fresh lake fed by replay; tune
// may adjust the flags and health rules before it runs.
func startAppliance(t *testing.T, src *replay.Server, tune func(*appliance.Config, *health.Rules)) *testAppliance {
	t.Helper()
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return startApplianceAt(t, src, url, tune)
}

// startApplianceAt is startAppliance for a replay already serving at url
// (a restart: tune sets the data directory of the earlier run).
func startApplianceAt(t *testing.T, src *replay.Server, url string, tune func(*appliance.Config, *health.Rules)) *testAppliance {
	t.Helper()
	f := appliance.Config{Store: appliance.Store{Data: t.TempDir()}, Source: url, UserAgent: ingest.DefaultUserAgent,
		Partitions: ingest.DefaultPartitions, Trigger: 200 * time.Millisecond, SessionsTrigger: 200 * time.Millisecond,
		MaxOffsetsPerTrigger: 20_000, CheckpointLoss: "rebuild", Watermark: 10 * time.Minute, SessionGap: 30 * time.Minute,
		Refresh: time.Hour, HTTPAddr: "127.0.0.1:0"}
	rules := health.DefaultRules
	rules.Every = 200 * time.Millisecond
	if tune != nil {
		tune(&f, &rules)
	}
	f.Health = rules
	log := slog.New(&telemetry.RingHandler{Next: slog.NewTextHandler(io.Discard, nil), Ring: telemetry.NewLogRing(50)})
	ctx, cancel := context.WithCancel(context.Background())
	p, err := appliance.Open(ctx, f, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	a := &testAppliance{p: p, log: log, src: src, cancel: cancel, errc: make(chan error, 1)}
	go func() { a.errc <- p.Run(ctx, io.Discard) }()
	t.Cleanup(a.stop)
	if a.base = p.WaitHTTP(ctx); a.base == "" {
		t.Fatal("the HTTP surface did not come up")
	}
	return a
}

func (a *testAppliance) stop() {
	if a.cancel == nil {
		return
	}
	a.cancel()
	<-a.errc
	a.cancel = nil
	a.p.Close()
}

// waitFor polls cond every 100 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// get fetches path from the appliance and returns the status and body.
func (a *testAppliance) get(t *testing.T, path string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// drained waits until the broker holds want records and no query lags.
func (a *testAppliance) drained(t *testing.T, want int64) {
	t.Helper()
	waitFor(t, 2*time.Minute, "the pipeline to drain", func() bool {
		return a.p.Status(context.Background()).Drained(ingest.DefaultTopic, want)
	})
}

func (a *testAppliance) observation(t *testing.T) observe.Observation {
	t.Helper()
	code, body := a.get(t, "/api/status")
	if code != http.StatusOK {
		t.Fatalf("/api/status: %d %s", code, body)
	}
	var o observe.Observation
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("/api/status: %v\n%s", err, body)
	}
	return o
}

func mustMarts(t *testing.T, p *appliance.Appliance) *marts.Marts {
	t.Helper()
	_, m := p.Components()
	if m == nil {
		t.Fatal("the marts have not started")
	}
	return m
}

func mustIngest(t *testing.T, p *appliance.Appliance) *ingest.Ingester {
	t.Helper()
	in, _ := p.Components()
	if in == nil {
		t.Fatal("ingest has not started")
	}
	return in
}
