package main

import (
	"io"
	"lakehouse/ingest/replay"
	"lakehouse/internal/observe"
	"lakehouse/internal/telemetry"
	"log/slog"
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
	a := startAppliance(t, src, func(_ *pipelineFlags, r *healthRules) {
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
	if got := a.p.tel.Logs.Newest(); len(got) == 0 || !strings.Contains(got[0].Msg, "not ready") {
		t.Errorf("the change was not logged as a warning: %+v", got)
	}

	src.Loops(replay.Generate(10, 400), 1) // on time again
	waitFor(t, 60*time.Second, "/readyz to recover", func() bool {
		code, _ := a.get(t, "/readyz")
		return code == http.StatusOK
	})
}

// TestHealthRules checks each rule on made-up observations: a query whose
// batches leave a growing lag is falling behind (not one that catches up in
// between), a query with input waiting and no batch is stalled (and stops
// the watchdog), a query-id change and a failed check are reasons.
func TestHealthRules(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	batches := func(lags ...int64) telemetry.Totals {
		var q telemetry.Totals
		for i, l := range lags {
			q.Record(telemetry.Batch{At: t0.Add(time.Duration(i) * 10 * time.Second), Lag: l, Candidates: 10})
		}
		q.LastAt = t0.Add(time.Duration(len(lags)-1) * 10 * time.Second)
		return q
	}
	now := t0.Add(125 * time.Second)
	rules := defaultHealthRules
	for _, tc := range []struct {
		name        string
		q           *observe.Query   // nil: no query
		tot         telemetry.Totals // q's running totals
		refresh     *observe.Refresh
		want        string // a reason containing this ("" : ready)
		progressing bool
	}{
		{"steady", &observe.Query{Name: "bronze", Lag: 0}, batches(0, 5, 0, 3, 0, 2, 0, 0, 1, 0, 0, 4, 0), nil, "", true},
		{"growing", &observe.Query{Name: "silver", Lag: 900}, batches(10, 50, 90, 160, 220, 300, 390, 450, 520, 610, 700, 800, 900), nil, "query silver falling behind", true},
		{"catching up", &observe.Query{Name: "silver", Lag: 10}, batches(900, 800, 700, 600, 500, 400, 300, 200, 100, 50, 30, 20, 10), nil, "", true},
		{"stalled", &observe.Query{Name: "bronze", Lag: 50}, batches(0), nil, "query bronze stalled", false},
		{"error", &observe.Query{Name: "sessions", Error: "read state: corrupt"}, telemetry.Totals{}, nil, "query sessions: read state: corrupt", false},
		{"id change", &observe.Query{Name: "bronze", IDChanges: 1, PreviousQueryID: "a", QueryID: "b"}, batches(0), nil, "checkpoint was lost", true},
		{"refresh failed", nil, telemetry.Totals{}, &observe.Refresh{RunID: "refresh-1", Err: "create DuckDB spill directory /d/tmp/duckdb: permission denied"},
			"marts refresh refresh-1 failed: create DuckDB spill directory /d/tmp/duckdb: permission denied", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHealth(rules, slog.New(slog.NewTextHandler(io.Discard, nil)))
			o := observe.Observation{At: now, Started: t0.Add(-time.Hour), Topics: []observe.Topic{{Name: "recentchange"}}, Refresh: tc.refresh}
			if tc.q != nil {
				q := *tc.q
				q.Totals = tc.tot.Wire()
				o.Queries = []observe.Query{q}
			}
			if tc.name == "id change" {
				o.Started = now.Add(-time.Minute)
			}
			st := h.evaluate(o, func(name string) (telemetry.Totals, bool) {
				if tc.q == nil || name != tc.q.Name {
					return telemetry.Totals{}, false
				}
				return tc.tot, true
			})
			if tc.want == "" {
				if !st.Ready {
					t.Errorf("got not ready: %v", st.Reasons)
				}
			} else if st.Ready || !strings.Contains(strings.Join(st.Reasons, "\n"), tc.want) {
				t.Errorf("got ready %v, reasons %v; want a reason with %q", st.Ready, st.Reasons, tc.want)
			}
			if st.Progressing != tc.progressing {
				t.Errorf("progressing: got %v, want %v", st.Progressing, tc.progressing)
			}
		})
	}
}

// TestHealthzNotOKWhileIngestCannotConnect: /healthz says "ok" while ingest
// is connected, and 503 with the reason once ingest has had no connection
// for DisconnectedFor (a wedged ingest once kept answering "ok").
func TestHealthzNotOKWhileIngestCannotConnect(t *testing.T) {
	src := replay.New(replay.Config{Seed: 11, Restamp: true})
	src.Loops(replay.Generate(11, 100), 1)
	a := startAppliance(t, src, func(_ *pipelineFlags, r *healthRules) { r.DisconnectedFor = time.Second })
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
