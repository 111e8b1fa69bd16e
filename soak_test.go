package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/internal/bench"
	"lakehouse/table"
)

// TestSoakShort is `bench --soak` in small: the real appliance (this test
// binary as `run`) fed for 45 s at 50 ev/s with bursts, sampled every 2 s,
// drained, stopped and verified. It checks that the result is complete
// (every event in silver, samples with every source, the report files),
// never a timing or memory figure.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a 45 s soak of the real appliance; skipped with -short")
	}
	out := t.TempDir()
	cfg := bench.SoakConfig{
		Duration: 45 * time.Second, Rate: 50, Burst: 150, BurstEvery: 20 * time.Second, BurstLength: 3 * time.Second,
		Sample: 2 * time.Second, CanaryEvery: 15 * time.Second, ViolationEvery: 15 * time.Second,
		Launch: func(args []string) *exec.Cmd { return selfCommand(append([]string{"run"}, args...)...) },
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := bench.RunSoak(ctx, cfg, bench.SoakRun{Out: out, Name: "soak", Command: "TestSoakShort"}, testWriter{t})
	if err != nil {
		t.Fatalf("soak: %v", err)
	}
	s := res.Summary
	if !s.Verified || !s.EverythingInSilver || len(s.FailedChecks) > 0 || s.Silver == 0 ||
		s.Broker != s.ExpectedBroker || s.DLQ != s.ExpectedDLQ {
		t.Fatalf("not complete: verified %v, every event in silver %v, failed %v, silver %d of %d, broker %d of %d, DLQ %d of %d",
			s.Verified, s.EverythingInSilver, s.FailedChecks, s.Silver, s.ExpectedSilver, s.Broker, s.ExpectedBroker, s.DLQ, s.ExpectedDLQ)
	}
	if res.Replay.Violations < 3 || res.Replay.Canaries < 3 {
		t.Errorf("replay mixed in %d violations and %d canaries, want 3 of each (every 15 s)", res.Replay.Violations, res.Replay.Canaries)
	}
	if len(res.Samples) < 5 {
		t.Fatalf("%d samples, want at least 5", len(res.Samples))
	}
	statusOK := 0
	for i, smp := range res.Samples {
		if smp.RSSBytes <= 0 || smp.AnonBytes <= 0 || smp.CPUSeconds <= 0 {
			t.Errorf("sample %d lacks the /proc figures: %+v", i, smp)
		}
		if smp.StatusOK {
			statusOK++
			if smp.Runtime.HeapInUseBytes == 0 || smp.Runtime.Goroutines == 0 {
				t.Errorf("sample %d lacks the runtime figures: %+v", i, smp.Runtime)
			}
		}
	}
	last := res.Samples[len(res.Samples)-1]
	for _, ident := range []string{table.Bronze, table.SilverEdits} {
		if ts, ok := last.Tables[ident]; !ok || ts.Snapshots == 0 || ts.MetadataBytes == 0 {
			t.Errorf("last sample: %s %+v (present %v), want snapshots and metadata", ident, ts, ok)
		}
	}
	// Sessions emit a session only a gap plus the watermark after its last
	// edit, so in a short run their batches commit markers, not snapshots.
	if ts, ok := last.Tables[table.EditorSessions]; !ok || ts.MetadataBytes == 0 {
		t.Errorf("last sample: %s %+v (present %v), want its metadata", table.EditorSessions, ts, ok)
	}
	if statusOK == 0 {
		t.Error("no sample got the appliance's /status")
	}
	// Freshness covers every silver row unless a snapshot went unseen.
	silverMissed := 0
	for _, ts := range s.Tables {
		if ts.Table == table.SilverEdits {
			silverMissed = ts.Missed
		}
	}
	if s.FreshRows == 0 || silverMissed == 0 && s.FreshRows != s.Silver {
		t.Errorf("freshness of %d silver rows (silver %d, snapshots missed %d)", s.FreshRows, s.Silver, silverMissed)
	}

	for _, f := range []string{"soak.md", "soak.json", "soak.svg"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("report file %s: %v", f, err)
		}
	}
	js, err := os.ReadFile(filepath.Join(out, "soak.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.SoakReport
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatalf("soak.json: %v", err)
	}
	if len(rep.Samples) != 0 || rep.Summary.Samples != len(res.Samples) || rep.Machine == "" || rep.Command != "TestSoakShort" || !rep.Summary.EverythingInSilver {
		t.Errorf("soak.json: %d samples (want none: a summary of %d), summary of %d, machine %q, command %q, every event in silver %v",
			len(rep.Samples), len(res.Samples), rep.Summary.Samples, rep.Machine, rep.Command, rep.Summary.EverythingInSilver)
	}
	md, _ := os.ReadFile(filepath.Join(out, "soak.md"))
	if !strings.Contains(string(md), "| every event in silver | yes:") || !strings.Contains(string(md), "(soak.svg)") {
		t.Errorf("soak.md lacks the verdict or the chart:\n%s", md)
	}
}

// TestSoakShortOnS3 is `bench --soak --soak-warehouse s3` in small: the
// appliance on gofakes3 served by the soak, with run's default settings
// for S3 (the S3 trigger), fed for 40 s, drained and verified against the
// S3 warehouse; its report has the object-store requests, counted by the
// appliance, per event and per day, and the freshness of every silver row.
func TestSoakShortOnS3(t *testing.T) {
	if testing.Short() {
		t.Skip("a 40 s soak of the real appliance on S3; skipped with -short")
	}
	out := t.TempDir()
	cfg := bench.SoakConfig{
		Duration: 40 * time.Second, Rate: 50, Burst: 150, BurstEvery: 20 * time.Second, BurstLength: 3 * time.Second,
		Sample: 2 * time.Second, Warmup: 4 * time.Second, S3: true,
		Launch: func(args []string) *exec.Cmd { return selfCommand(append([]string{"run"}, args...)...) },
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := bench.RunSoak(ctx, cfg, bench.SoakRun{Out: out, Name: "soak", Command: "TestSoakShortOnS3"}, testWriter{t})
	if err != nil {
		t.Fatalf("soak on S3: %v", err)
	}
	s := res.Summary
	if !s.Verified || !s.EverythingInSilver || len(s.FailedChecks) > 0 || s.Silver == 0 {
		t.Fatalf("not complete: verified %v, every event in silver %v, failed %v, silver %d of %d",
			s.Verified, s.EverythingInSilver, s.FailedChecks, s.Silver, s.ExpectedSilver)
	}
	if s.ObjectStore == nil || s.ObjectStore.Put == 0 || s.RequestsPerEvent <= 0 || s.RequestsPerDay <= 0 || s.RequestUSDPerDay <= 0 {
		t.Fatalf("no object-store requests in the summary: %+v, %v per event, %v per day, %v USD per day",
			s.ObjectStore, s.RequestsPerEvent, s.RequestsPerDay, s.RequestUSDPerDay)
	}
	if s.FreshRows != s.Silver || s.FreshP95 <= 0 {
		t.Errorf("freshness of %d silver rows (p95 %v s), want every one of %d", s.FreshRows, s.FreshP95, s.Silver)
	}
	md, _ := os.ReadFile(filepath.Join(out, "soak.md"))
	for _, w := range []string{"## Object-store requests", "--warehouse s3://", "| every event in silver | yes:"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("soak.md lacks %q:\n%s", w, md)
		}
	}
}
