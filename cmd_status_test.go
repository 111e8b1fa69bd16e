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
	src := replay.New(replay.Config{Seed: 13, Restamp: true})
	src.Loops(replay.Generate(13, 300), 1)
	a := startAppliance(t, src, nil)
	a.drained(t, src.Counts().OnTime)
	waitFor(t, 30*time.Second, "readiness", func() bool { return a.p.health.state().Ready })
	var out, errb bytes.Buffer
	if code := run([]string{"status", "--http", strings.TrimPrefix(a.base, "http://")}, &out, &errb); code != 0 {
		t.Fatalf("status: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{": READY", "pipeline: source 300 -> broker 300", "bronze", "silver", "sessions",
		"bronze.recentchange", "silver.edits", "freshness of silver.edits"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"status", "--http", "127.0.0.1:1"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no appliance answering") {
		t.Errorf("status against nothing: exit %d, stderr %q", code, errb.String())
	}
}
