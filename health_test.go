package main

import (
	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/health"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReadyzTurnsRedWhenSilverDropsEverythingAsLate: /readyz is 200 while
// the pipeline runs normally, 503 naming silver while every event it gets is
// below its watermark (a source replaying an old backlog, or a bad clock),
// and 200 again once on-time events flow.
func TestReadyzTurnsRedWhenSilverDropsEverythingAsLate(t *testing.T) {
	src := replay.New(replay.Config{Seed: 9, Restamp: true})
	src.Loops(replay.Generate(9, 400), 1)
	a := startAppliance(t, src, func(_ *appliance.Config, r *health.Rules) {
		r.LateWindow, r.LateMinRows = 3*time.Second, 50
	})
	a.drained(t, src.Counts().OnTime)
	waitFor(t, 30*time.Second, "/readyz to say ready", func() bool {
		code, _ := a.get(t, "/readyz")
		return code == http.StatusOK
	})

	src.Late(400, 2*time.Hour) // far below silver's 10-minute watermark
	waitFor(t, 60*time.Second, "/readyz to turn 503 for silver's late rows", func() bool {
		code, body := a.get(t, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "query silver drops") && strings.Contains(body, "as late")
	})
	if o := a.observation(t); o.Health.Ready || len(o.Health.Reasons) == 0 {
		t.Errorf("/api/status health: got %+v, want not ready with reasons", o.Health)
	}
	if got := a.p.Telemetry().Logs.Newest(); len(got) == 0 || !strings.Contains(got[0].Msg, "not ready") {
		t.Errorf("the change was not logged as a warning: %+v", got)
	}

	src.Loops(replay.Generate(10, 400), 1) // on time again
	waitFor(t, 60*time.Second, "/readyz to recover", func() bool {
		code, _ := a.get(t, "/readyz")
		return code == http.StatusOK
	})
}

// TestHealthzNotOKWhileIngestCannotConnect: /healthz says "ok" while ingest
// is connected, and 503 with the reason once ingest has had no connection
// for DisconnectedFor (a wedged ingest once kept answering "ok").
func TestHealthzNotOKWhileIngestCannotConnect(t *testing.T) {
	src := replay.New(replay.Config{Seed: 11, Restamp: true})
	src.Loops(replay.Generate(11, 100), 1)
	a := startAppliance(t, src, func(_ *appliance.Config, r *health.Rules) { r.DisconnectedFor = time.Second })
	a.drained(t, src.Counts().OnTime)
	if code, body := a.get(t, "/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz while connected: %d %q, want 200 ok", code, body)
	}
	src.Close()
	waitFor(t, 60*time.Second, "/healthz to turn 503 without a source", func() bool {
		code, body := a.get(t, "/healthz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "ingest: not connected to the source")
	})
}
