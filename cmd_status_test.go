package main

import (
	"bytes"
	"lakehouse/ingest/replay"
	"strings"
	"testing"
	"time"
)

// TestStatusCommand: `lakehouse status` prints a running appliance's
// picture: readiness, the hops, every query and table.
func TestStatusCommand(t *testing.T) {
	// Not restamped: the events keep the recording's times, months old, as
	// the demo's back-dated replay does; the appliance's delay stays small.
	src := replay.New(replay.Config{Seed: 13})
	src.Loops(replay.Generate(13, 300), 1)
	a := startAppliance(t, src, nil)
	a.drained(t, src.Counts().OnTime)
	waitFor(t, 30*time.Second, "readiness", func() bool { return a.p.health.state().Ready })
	var out, errb bytes.Buffer
	if code := run([]string{"status", "--http", strings.TrimPrefix(a.base, "http://")}, &out, &errb); code != 0 {
		t.Fatalf("status: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{": READY", "pipeline: source 300 -> broker 300", "bronze", "silver", "sessions",
		"bronze.recentchange", "silver.edits", "freshness of silver.edits: intake to commit p50 ", "event time: newest row "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
	if f := a.observation(t).Fresh; !(float64(f.HourP95) < 600 && float64(f.NowS) > 86400) {
		t.Errorf("freshness: intake to commit p95 %v s, newest event %v s old; want the appliance's delay (under 600 s) apart from the events' age (over a day)",
			f.HourP95, f.NowS)
	}
	out.Reset()
	if code := run([]string{"status", "--http", "127.0.0.1:1"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no appliance answering") {
		t.Errorf("status against nothing: exit %d, stderr %q", code, errb.String())
	}
}
