package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/health"
	"lakehouse/internal/observe"
)

// TestRefusedModelKeepsTheStreamsRunning: the appliance started with
// --models (the wiring run uses: the directory read at start, the models
// built by the scheduler's refresh) over a directory holding a good model
// and a broken one keeps ingesting every event into silver, builds the
// good model, names the broken one (file:line: rule) in /readyz and on
// /api/status, and writes no table of it.
func TestRefusedModelKeepsTheStreamsRunning(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"per_wiki.sql": "-- @unit day(day)\n-- @key day, wiki\n-- @check reconciles(sum(edits), silver.edits, count(*))\n" +
			"SELECT CAST(event_time AS DATE) AS day, wiki, count(*) AS edits FROM silver.edits GROUP BY ALL\n",
		"broken.sql": "-- @unit table\nSELECT wiki,\n  count(*) FORM silver.edits\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := replay.New(replay.Config{Seed: 5, Restamp: true})
	src.Loops(replay.Generate(5, 300), 1)
	a := startAppliance(t, src, func(c *appliance.Config, _ *health.Rules) {
		c.Models, c.Refresh = dir, time.Second
	})
	a.drained(t, src.Counts().OnTime)
	checkSilver(t, a, src.Counts().OnTimeEditNew)

	broken := filepath.Join(dir, "broken.sql") + ":3: syntax: "
	good := "gold.per_wiki: reconciles(sum(edits), silver.edits, count(*))"
	// A refresh that ran before silver held the events may not have built
	// the good model yet: wait for one that did.
	var readyz string
	var checks []observe.Check
	waitFor(t, 2*time.Minute, "a refresh that built the good model and refused the broken one", func() bool {
		var code int
		code, readyz = a.get(t, "/readyz")
		if o := a.observation(t); o.Refresh != nil {
			checks = o.Refresh.Checks
		}
		return code == http.StatusServiceUnavailable && slices.ContainsFunc(checks, func(c observe.Check) bool { return c.Name == good && c.Passed })
	})
	if !strings.Contains(readyz, "asset check model broken.sql: refused failed: "+broken) {
		t.Fatalf("/readyz does not name the refused model (%s):\n%s", broken, readyz)
	}
	for _, c := range checks {
		if !c.Passed && c.Name != "model broken.sql: refused" {
			t.Errorf("check failed: %+v", c)
		}
	}
	tables, err := a.p.Lake().Tables(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tables, "gold.per_wiki") || slices.Contains(tables, "gold.broken") {
		t.Fatalf("tables: %v, want gold.per_wiki and no gold.broken", tables)
	}
	// The streams still run after the refusal: more events land in silver.
	more := replay.Generate(6, 100)
	src.Loops(more, 1)
	a.drained(t, src.Counts().OnTime)
	checkSilver(t, a, src.Counts().OnTimeEditNew)
}
