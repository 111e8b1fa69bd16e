package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/fault"
	"lakehouse/internal/health"
	"lakehouse/internal/localapi"
	"lakehouse/table"
)

// cli runs one command of this binary in process and returns its exit code
// and output.
func cli(args ...string) (int, string) {
	var out strings.Builder
	code := run(args, &out, &out)
	return code, out.String()
}

// TestReadersBesideARunningAppliance: query, verify, topics and status
// work on the data directory of `run` in another process while it ingests
// (they used to wait 5 s for its lock and fail), through its local
// endpoint; once it has drained, their answers equal what the same lake
// answers when the appliance is stopped; and with the appliance gone
// they open the files as before.
func TestReadersBesideARunningAppliance(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	src := replay.New(replay.Config{Seed: 45, Restamp: true, ResumeAfter: true, Rate: 400})
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	src.Loops(replay.Generate(45, 3000), 1)
	child := selfCommand("run", "--data", dir, "--source", url, "--http", "off", "--trigger", "200ms",
		"--sessions-trigger", "200ms", "--refresh", "3s", "--max-snapshots", "12", "--keep-snapshots", "4")
	var log strings.Builder
	child.Stdout, child.Stderr = &log, &log
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = child.Process.Signal(syscall.SIGTERM)
			_ = child.Wait()
		}
	}
	t.Cleanup(stop)
	waitFor(t, time.Minute, "appliance.json", func() bool {
		_, err := os.Stat(filepath.Join(dir, localapi.File))
		return err == nil
	})

	// While it ingests.
	waitFor(t, time.Minute, "events in bronze", func() bool {
		code, out := cli("query", "--data", dir, "--format", "csv", "SELECT count(*) AS n FROM bronze.recentchange")
		return code == 0 && out != "n\n0\n"
	})
	for _, cmd := range [][]string{
		{"query", "--data", dir, "SELECT count(*) FROM silver.edits"},
		{"topics", "--data", dir},
		{"verify", "--data", dir},
		{"status", "--data", dir},
	} {
		start := time.Now()
		code, out := cli(cmd...)
		if code != 0 {
			t.Fatalf("%s while the appliance ingests: exit %d after %s:\n%s\nappliance log:\n%s", cmd[0], code, time.Since(start), out, log.String())
		}
		if cmd[0] == "verify" && !strings.Contains(out, "skip bolt-files") {
			t.Errorf("verify beside the appliance does not say it skipped the page check:\n%s", out)
		}
	}

	// Drained: the answers through the appliance equal the stopped lake's.
	want := src.Counts().OnTime
	waitFor(t, 2*time.Minute, "the appliance to drain", func() bool {
		code, out := cli("query", "--data", dir, "--format", "csv", "SELECT count(*) AS n FROM bronze.recentchange")
		if code != 0 || out != "n\n"+itoa(want)+"\n" {
			return false
		}
		code, _ = cli("verify", "--data", dir, "--expect-drained")
		return code == 0
	})
	questions := []string{
		"SELECT count(*) AS n, count(DISTINCT (broker_partition, broker_offset)) AS offsets FROM bronze.recentchange",
		"SELECT wiki, count(*) AS edits FROM silver.edits GROUP BY wiki ORDER BY edits DESC, wiki LIMIT 5",
		"SHOW TABLES",
	}
	var live []string
	for _, q := range questions {
		code, out := cli("query", "--data", dir, "--format", "csv", q)
		if code != 0 {
			t.Fatalf("query %q beside the appliance: %s", q, out)
		}
		live = append(live, out)
	}
	_, liveTopics := cli("topics", "--data", dir)
	stop()
	if _, err := os.Stat(filepath.Join(dir, localapi.File)); !os.IsNotExist(err) {
		t.Errorf("appliance.json after a clean stop: %v", err)
	}
	for i, q := range questions {
		code, out := cli("query", "--data", dir, "--format", "csv", q)
		if code != 0 || out != live[i] {
			t.Errorf("query %q: stopped lake %q (exit %d), through the running appliance %q", q, out, code, live[i])
		}
	}
	if _, out := cli("topics", "--data", dir); out != liveTopics {
		t.Errorf("topics: stopped %q, running %q", out, liveTopics)
	}
	if !strings.Contains(live[0], itoa(want)+","+itoa(want)) {
		t.Errorf("bronze through the appliance: %q, want %d rows and offsets", live[0], want)
	}
	if code, out := cli("verify", "--data", dir, "--expect-drained"); code != 0 || !strings.Contains(out, "ok   bolt-files") {
		t.Errorf("verify of the stopped lake: exit %d\n%s", code, out)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestSlowQueryKeepsItsFiles: a query beside the running appliance, held
// after it planned, reads what it planned although a compaction replaced
// those files and an expiry dropped every snapshot but the newest beside
// it; once it released its lease the next expiry deletes them (so the lease
// kept them).
func TestSlowQueryKeepsItsFiles(t *testing.T) {
	dir := t.TempDir()
	src := replay.New(replay.Config{Seed: 46, Restamp: true, ResumeAfter: true})
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	src.Loops(replay.Generate(46, 2000), 1)
	a := startApplianceAt(t, src, url, func(f *appliance.Config, _ *health.Rules) {
		f.Data, f.MaxOffsetsPerTrigger, f.Refresh, f.CompactEvery, f.MaintainEvery = dir, 100, -1, time.Hour, time.Hour
	})
	want := src.Counts().OnTime
	a.drained(t, want)
	ctx := context.Background()
	before, err := a.p.Lake().DataFiles(ctx, table.Bronze)
	if err != nil || len(before.Paths) < 4 {
		t.Fatalf("inconclusive: bronze has %d files (%v)", len(before.Paths), err)
	}

	planned := make(chan struct{})
	resume := make(chan struct{})
	fault.ArmFunc("marts.query-planned", 0, func(string) { close(planned); <-resume })
	t.Cleanup(fault.Disarm)
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		code, out := cli("query", "--data", dir, "--format", "csv", "SELECT count(*) AS n, count(DISTINCT (broker_partition, broker_offset)) AS o FROM bronze.recentchange")
		done <- result{code, out}
	}()
	select {
	case <-planned:
	case r := <-done:
		t.Fatalf("the query ended before it was held: %d %s", r.code, r.out)
	case <-time.After(2 * time.Minute):
		t.Fatal("the query did not plan within 2 minutes")
	}
	fault.Disarm()
	res, err := a.p.Lake().Compact(ctx, table.Bronze, table.CompactPolicy{TargetBytes: 64 << 20, FanIn: 2})
	if err != nil || res.FilesRemoved < 2 {
		t.Fatalf("inconclusive: compaction replaced %d files (%v)", res.FilesRemoved, err)
	}
	if _, err := a.p.Lake().ExpireSnapshots(ctx, table.Bronze, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	close(resume)
	r := <-done
	if r.code != 0 || r.out != "n,o\n"+itoa(want)+","+itoa(want)+"\n" {
		t.Fatalf("the held query: exit %d, %q; want %d rows and offsets", r.code, r.out, want)
	}
	if _, err := a.p.Lake().ExpireSnapshots(ctx, table.Bronze, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	gone := 0
	for _, p := range before.Paths {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			gone++
		}
	}
	if gone == 0 {
		t.Fatalf("no replaced file deleted once the lease was released: the lease did not decide")
	}
}
