package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/table"
)

// TestRelandMissingBronzeFile: a live bronze data file deleted from the
// warehouse is noticed by verify; `reland --dry-run` names it and the
// offsets and changes nothing; `reland` re-lands exactly those offsets
// from the broker (verify clean: every offset once), a second `reland`
// finds nothing to do, and the appliance then runs on with silver neither
// missing nor repeating an event. Once the broker has trimmed the offsets
// of a missing file, `reland` refuses and changes nothing.
func TestRelandMissingBronzeFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	events := replay.Generate(47, 500).Events
	appendEvents(t, dir, events[:300]) // relocate_test.go
	runDrained(t, dir, 300, false)

	gone := deleteBronzeFile(t, dir)
	if out, err := selfCommand("verify", "--data", dir).CombinedOutput(); err == nil {
		t.Fatalf("inconclusive: verify passed with %s deleted:\n%s", gone, out)
	}
	before := hashTree(t, dir)
	out, err := selfCommand("reland", "--data", dir, "--dry-run").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1 missing") || !strings.Contains(string(out), "would re-land") {
		t.Fatalf("reland --dry-run: %v\n%s", err, out)
	}
	if d := diffTrees(before, hashTree(t, dir)); d != "" {
		t.Fatalf("reland --dry-run changed the data directory:\n%s", d)
	}
	out, err = selfCommand("reland", "--data", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "re-landed") {
		t.Fatalf("reland: %v\n%s", err, out)
	}
	t.Logf("reland: %s", out)
	verifyCounts(t, dir, 300)
	out, err = selfCommand("reland", "--data", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nothing to re-land") {
		t.Fatalf("second reland: %v\n%s", err, out)
	}

	appendEvents(t, dir, events[300:])
	runDrained(t, dir, 200, false)
	verifyCounts(t, dir, 500)

	// The broker trims what bronze committed; a file lost after that
	// cannot come back.
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	must(t, err)
	_, err = db.Retain(context.Background(), ingest.DefaultTopic, broker.Retention{MaxAge: time.Nanosecond, Now: time.Now().Add(time.Hour)})
	must(t, err)
	must(t, db.Close())
	deleteBronzeFile(t, dir)
	before = hashTree(t, dir)
	out, err = selfCommand("reland", "--data", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no longer holds") || !strings.Contains(string(out), "nothing was changed") {
		t.Fatalf("reland after the broker trimmed the offsets: %v\n%s", err, out)
	}
	if d := diffTrees(before, hashTree(t, dir)); d != "" {
		t.Fatalf("a refused reland changed the data directory:\n%s", d)
	}
}

// deleteBronzeFile deletes the live bronze data file with the most rows
// and returns its path.
func deleteBronzeFile(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	lake, err := table.Open(ctx, table.Config{Dir: dir, ReadOnly: true})
	must(t, err)
	files, err := lake.DataFiles(ctx, table.Bronze)
	must(t, lake.Close())
	must(t, err)
	if len(files.Paths) < 2 {
		t.Fatalf("inconclusive: bronze has %d data files", len(files.Paths))
	}
	p := files.Paths[len(files.Paths)/2]
	must(t, os.Remove(p))
	return p
}
