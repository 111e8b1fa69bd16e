package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/health"
	"lakehouse/marts"
)

// TestRestartDoesNotRedoHistory: the service restarted on a lake it
// refreshed before (run's wiring, --no-ingest) rebuilds no gold unit and
// counts no bronze offset or silver id again in its first refresh, and is
// ready with every check passing: what the marts and checks know is in
// the lake, not in the process. Events added while it was down are all
// the second restart rebuilds and counts.
func TestRestartDoesNotRedoHistory(t *testing.T) {
	dir := t.TempDir()
	src := replay.New(replay.Config{Seed: 49, Restamp: true, ResumeAfter: true})
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	src.Loops(replay.Generate(49, 1500), 1)
	onData := func(f *appliance.Config, _ *health.Rules) { f.Data = dir }

	a := startApplianceAt(t, src, url, onData)
	a.drained(t, src.Counts().OnTime)
	// The scheduler's first refresh ran at start; this one covers every
	// event.
	if rep, err := mustMarts(t, a.p).Refresh(context.Background()); err != nil || !rep.Passed() {
		t.Fatalf("refresh before the restart: %v %v", err, rep.Checks)
	}
	a.stop()

	restart := func() marts.Report {
		t.Helper()
		b := startApplianceAt(t, src, url, func(f *appliance.Config, r *health.Rules) {
			f.Data, f.NoIngest, f.Refresh = dir, true, time.Hour
		})
		defer b.stop()
		var rep marts.Report
		waitFor(t, 2*time.Minute, "the first refresh of the restarted appliance", func() bool {
			_, m := b.p.Components() // nil until the marts have started
			if m == nil {
				return false
			}
			var ok bool
			rep, ok = m.LastReport()
			return ok
		})
		if rep.Err != "" || !rep.Passed() {
			t.Fatalf("first refresh after a restart: %s %v", rep.Err, rep.Checks)
		}
		waitFor(t, time.Minute, "/readyz 200", func() bool { code, _ := b.get(t, "/readyz"); return code == 200 })
		return rep
	}
	checkOf := func(rep marts.Report, name string) marts.Check {
		for _, c := range rep.Checks {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no check %s in %v", name, rep.Checks)
		return marts.Check{}
	}

	rep := restart()
	if rep.Scope != "0 edit days (0 hours), 0 session days" {
		t.Errorf("first refresh after a restart rebuilt %q, want nothing", rep.Scope)
	}
	if c := checkOf(rep, marts.CheckBronzeOffsets); !strings.Contains(c.Message, "0 rows added since the last check") {
		t.Errorf("first offsets check after a restart: %s; want no row counted again", c.Message)
	}
	if c := checkOf(rep, marts.CheckSilverUnique); c.Numbers["rows_checked_new"] != 0 {
		t.Errorf("first uniqueness check after a restart counted %d ids again: %s", c.Numbers["rows_checked_new"], c.Message)
	}

	// Events arrive with the marts off (--refresh 0): the first refresh of
	// the next restart rebuilds and counts those, not history.
	src.Loops(replay.Generate(50, 300), 1)
	c := startApplianceAt(t, src, url, func(f *appliance.Config, r *health.Rules) { f.Data, f.Refresh = dir, 0 })
	c.drained(t, src.Counts().OnTime)
	c.stop()
	rep = restart()
	if strings.HasPrefix(rep.Scope, "full") || strings.Contains(rep.Scope, "all ") {
		t.Errorf("refresh after new events rebuilt %q, want only the units they fell in", rep.Scope)
	}
	if c := checkOf(rep, marts.CheckBronzeOffsets); !strings.Contains(c.Message, "rows added since the last check") || c.Numbers["bronze_rows"] != src.Counts().OnTime {
		t.Errorf("offsets check after new events: %s (%v); want an incremental pass over every row", c.Message, c.Numbers)
	}
}
