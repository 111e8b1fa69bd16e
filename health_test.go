package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"lakehouse/ingest"
)

// TestReadyzTurnsRedWhenSilverDropsEverythingAsLate: /readyz is 200 while
// the pipeline runs normally, 503 naming silver while every event it gets is
// below its watermark (a source replaying an old backlog, or a bad clock),
// and 200 again once on-time events flow.
func TestReadyzTurnsRedWhenSilverDropsEverythingAsLate(t *testing.T) {
	replay := ingest.NewReplay(ingest.ReplayConfig{Seed: 9, Restamp: true})
	replay.Loops(ingest.Generate(9, 400), 1)
	a := startAppliance(t, replay, func(_ *pipelineFlags, r *healthRules) {
		r.LateWindow, r.LateMinRows = 3*time.Second, 50
	})
	a.drained(t, replay.Counts().OnTime)
	waitFor(t, 30*time.Second, "/readyz to say ready", func() bool {
		code, _ := a.get(t, "/readyz")
		return code == http.StatusOK
	})

	replay.Late(400, 2*time.Hour) // far below silver's 10-minute watermark
	waitFor(t, 60*time.Second, "/readyz to turn 503 for silver's late rows", func() bool {
		code, body := a.get(t, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "query silver drops") && strings.Contains(body, "as late")
	})
	if o := a.observation(t); o.Health.Ready || len(o.Health.Reasons) == 0 {
		t.Errorf("/api/status health: got %+v, want not ready with reasons", o.Health)
	}
	if got := a.p.tel.logs.newest(); len(got) == 0 || !strings.Contains(got[0].Msg, "not ready") {
		t.Errorf("the change was not logged as a warning: %+v", got)
	}

	replay.Loops(ingest.Generate(10, 400), 1) // on time again
	waitFor(t, 60*time.Second, "/readyz to recover", func() bool {
		code, _ := a.get(t, "/readyz")
		return code == http.StatusOK
	})
}
