package health

import (
	"io"
	"lakehouse/internal/observe"
	"lakehouse/internal/telemetry"
	"log/slog"
	"strings"
	"testing"
	"time"
)

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
	rules := DefaultRules
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
			h := New(rules, slog.New(slog.NewTextHandler(io.Discard, nil)))
			o := observe.Observation{At: now, Started: t0.Add(-time.Hour), Topics: []observe.Topic{{Name: "recentchange"}}, Refresh: tc.refresh}
			if tc.q != nil {
				q := *tc.q
				q.Totals = tc.tot.Wire()
				o.Queries = []observe.Query{q}
			}
			if tc.name == "id change" {
				o.Started = now.Add(-time.Minute)
			}
			st := h.Evaluate(o, func(name string) (telemetry.Totals, bool) {
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

// TestHealthWarnsOfTheDisk: a disk budget's warning is a warning of
// readiness, which stays ready.
func TestHealthWarnsOfTheDisk(t *testing.T) {
	h := New(DefaultRules, slog.New(slog.NewTextHandler(io.Discard, nil)))
	o := observe.Disk{Warning: "disk: 2.5 days left before the disk reserve"}
	st := h.Evaluate(observe.Observation{At: time.Now(), Topics: []observe.Topic{{Name: "recentchange"}}, Disk: &o}, noTotals)
	if !st.Ready || len(st.Warnings) != 1 || st.Warnings[0] != o.Warning {
		t.Fatalf("health with the disk warning: %+v; want ready with that one warning", st)
	}
}

// noTotals is the totals of an observation without batches.
func noTotals(string) (telemetry.Totals, bool) { return telemetry.Totals{}, false }
