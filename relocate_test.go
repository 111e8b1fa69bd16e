package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/syncbuf"
)

// TestCopiedDataDirIsSelfContained: a data directory copied with its
// tables' metadata naming the original's absolute paths runs on its own
// files only. The copy ingests more events (bronze, silver and sessions
// commit, compaction rewrites bronze and superseded metadata files are
// deleted), then the original does; each verifies clean with its own
// counts, and neither run changed a byte of the other directory. Then both
// are moved away from the paths their metadata names (so a read of an old
// path would fail), and each still runs, refreshes its marts and verifies
// clean.
func TestCopiedDataDirIsSelfContained(t *testing.T) {
	root := t.TempDir()
	orig, cp := filepath.Join(root, "orig", "data"), filepath.Join(root, "copy", "data")
	events := replay.Generate(23, 700).Events
	appendEvents(t, orig, events[:200])
	runDrained(t, orig, 200, false)

	copyDir(t, orig, cp) // corrupt_test.go
	appendEvents(t, cp, events[200:400])
	origBefore, copyBefore := hashTree(t, orig), hashTree(t, cp)
	log := runDrained(t, cp, 200, false)
	if d := diffTrees(origBefore, hashTree(t, orig)); d != "" {
		t.Fatalf("running the copy changed the original:\n%s", d)
	}
	if !strings.Contains(log, "data directory copied or moved") || !strings.Contains(log, "created_in="+filepath.Join(orig, "warehouse")) {
		t.Fatalf("inconclusive: the copy's run does not say it was created in %s:\n%s", orig, log)
	}
	if !removedUnder(diffTrees(copyBefore, hashTree(t, cp)), "warehouse/") {
		t.Fatal("inconclusive: the copy's run removed no file it was copied with (no superseded metadata file or compacted data file deleted), so it never deleted a path the metadata names")
	}
	verifyCounts(t, cp, 400)

	appendEvents(t, orig, events[400:500])
	copyAfter := hashTree(t, cp)
	runDrained(t, orig, 100, false)
	if d := diffTrees(copyAfter, hashTree(t, cp)); d != "" {
		t.Fatalf("running the original changed the copy:\n%s", d)
	}
	verifyCounts(t, orig, 300)

	// Neither directory is where its metadata says any more.
	moved, movedOrig := filepath.Join(root, "moved", "data"), filepath.Join(root, "moved-orig", "data")
	for _, m := range [][2]string{{cp, moved}, {orig, movedOrig}} {
		must(t, os.MkdirAll(filepath.Dir(m[1]), 0o755))
		must(t, os.Rename(m[0], m[1]))
	}
	appendEvents(t, moved, events[500:600])
	appendEvents(t, movedOrig, events[600:700])
	runDrained(t, moved, 100, true)
	runDrained(t, movedOrig, 100, true)
	verifyCounts(t, moved, 500)
	verifyCounts(t, movedOrig, 400)
}

// appendEvents appends raw events to dir's recentchange topic (creating the
// broker and topics on first use).
func appendEvents(t *testing.T, dir string, events [][]byte) {
	t.Helper()
	ctx := context.Background()
	must(t, os.MkdirAll(dir, 0o755))
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	must(t, err)
	defer db.Close()
	must(t, db.CreateTopic(ctx, ingest.DefaultTopic, ingest.DefaultPartitions))
	must(t, db.CreateTopic(ctx, ingest.DefaultDLQTopic, 1))
	recs := make([]broker.Record, len(events))
	for i, e := range events {
		recs[i] = broker.Record{Topic: ingest.DefaultTopic, Partition: broker.AnyPartition, Timestamp: time.Now(), Value: e}
	}
	_, err = db.Append(ctx, broker.Batch{Records: recs})
	must(t, err)
}

var batchLine = regexp.MustCompile(`msg="stream batch" query=(\w+) .* rows_in=(\d+) rows_out=(\d+) `)

// runDrained runs the appliance on dir without ingest, in batches of 10
// offsets (so that every table gets many commits), until bronze and silver
// have read the n new records and sessions every new silver row (and, with
// marts, a refresh ran after that), then stops it with SIGTERM and returns
// its log.
func runDrained(t *testing.T, dir string, n int64, marts bool) string {
	t.Helper()
	return runDrainedLogging(t, dir, n, marts, false)
}

// runDrainedLogging is runDrained that accepts errors in the log when
// errorsExpected (a recovery the test provoked logs at error level).
func runDrainedLogging(t *testing.T, dir string, n int64, marts, errorsExpected bool) string {
	t.Helper()
	refresh := "0"
	if marts {
		refresh = "2s"
	}
	cmd := selfCommand("run", "--data", dir, "--no-ingest", "--http", "off", "--refresh", refresh,
		"--max-offsets-per-trigger", "10", "--trigger", "50ms", "--sessions-trigger", "0")
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	drained := func() bool {
		log := out.String()
		in := map[string]int64{}
		var silverOut int64
		end := 0
		for _, m := range batchLine.FindAllStringSubmatchIndex(log, -1) {
			q := log[m[2]:m[3]]
			rows, _ := strconv.ParseInt(log[m[4]:m[5]], 10, 64)
			in[q] += rows
			if q == "silver" {
				o, _ := strconv.ParseInt(log[m[6]:m[7]], 10, 64)
				silverOut += o
			}
			end = m[1]
		}
		if in["bronze"] < n || in["silver"] < n || in["sessions"] < silverOut {
			return false
		}
		return !marts || strings.Contains(log[end:], `msg="marts: run ok" job=refresh`)
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) && !drained() {
		time.Sleep(100 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	log := out.String()
	if err != nil {
		t.Fatalf("run on %s: %v\n%s", dir, err, log)
	}
	if !drained() {
		t.Fatalf("run on %s did not land %d new records in bronze, silver and sessions (and refresh its marts: %v) in 90 s:\n%s", dir, n, marts, log)
	}
	for _, bad := range []string{"level=ERROR", "outside the warehouse"} {
		if strings.Contains(log, bad) && !(errorsExpected && bad == "level=ERROR") {
			t.Errorf("run on %s logged %q:\n%s", dir, bad, log)
		}
	}
	return log
}

// verifyCounts runs verify on dir: it must pass with n records in bronze.
func verifyCounts(t *testing.T, dir string, n int) {
	t.Helper()
	out, err := selfCommand("verify", "--data", dir).CombinedOutput()
	want := "bronze " + strconv.Itoa(n) + " rows, " + strconv.Itoa(n) + " distinct offsets"
	if err != nil || !strings.Contains(string(out), want) {
		t.Fatalf("verify %s: %v (want %q)\n%s", dir, err, want, out)
	}
}

// removedUnder reports whether a diffTrees listing removes a file under
// prefix.
func removedUnder(diff, prefix string) bool {
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "- "+prefix) && !strings.HasSuffix(l, "/") {
			return true
		}
	}
	return false
}
