package main

import (
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/observe"
)

// TestDiskBudgetGrowthAndDaysLeft: the budget splits the data directory
// by component (allocated bytes), says nothing of growth before
// diskMinSpan of samples, then the growth per day and the days left
// before the reserve at that pace; it warns (and readiness stays ready,
// with a warning) once fewer than diskWarnDays are left, or once free
// space is under twice the reserve.
func TestDiskBudgetGrowthAndDaysLeft(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("broker.db", 1<<20)
	write("catalog.db", 64<<10)
	write("checkpoints/bronze/offsets", 4<<10)
	write("warehouse/bronze/data/a.parquet", 256<<10)
	const gib = int64(1) << 30
	free := 10 * gib
	b := newDiskBudget(dir, "", 128<<20)
	b.statfs = func(string) (int64, int64, error) { return 30 * gib, free, nil }
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	o := b.observe(t0)
	want := map[string]int64{"broker.db": 1 << 20, "catalog.db": 64 << 10, "checkpoints": 4 << 10, "warehouse": 256 << 10}
	for _, c := range o.Components {
		if c.Bytes < want[c.Name] {
			t.Errorf("component %s: %d bytes, want at least %d", c.Name, c.Bytes, want[c.Name])
		}
		delete(want, c.Name)
	}
	if len(want) != 0 || !math.IsNaN(float64(o.GrowthDay)) || o.Warning != "" {
		t.Fatalf("first look: components missing %v, growth %v, warning %q; want all, none measured, no warning", want, o.GrowthDay, o.Warning)
	}
	// 64 MiB more in an hour: 1.5 GiB a day; 10 GiB free less the reserve
	// last about 6.6 days: fewer than diskWarnDays.
	write("broker.db2", 64<<20)
	o = b.observe(t0.Add(5 * time.Minute))
	if !math.IsNaN(float64(o.GrowthDay)) {
		t.Fatalf("growth after 5 minutes of samples: %v, want none yet", o.GrowthDay)
	}
	o = b.observe(t0.Add(time.Hour))
	wantGrowth := float64(64<<20) * 24
	if g := float64(o.GrowthDay); math.Abs(g-wantGrowth) > wantGrowth/20 {
		t.Fatalf("growth %.0f bytes/day, want about %.0f", g, wantGrowth)
	}
	wantLeft := float64(free-128<<20) / wantGrowth
	if l := float64(o.DaysLeft); math.Abs(l-wantLeft) > wantLeft/20 || !strings.Contains(o.Warning, "days left before the disk reserve") {
		t.Fatalf("days left %.2f (want about %.2f), warning %q", l, wantLeft, o.Warning)
	}
	h := newHealth(defaultHealthRules, slog.New(slog.NewTextHandler(io.Discard, nil)))
	st := h.evaluate(observe.Observation{At: t0.Add(time.Hour), Topics: []observe.Topic{{Name: "recentchange"}}, Disk: &o}, noTotals)
	if !st.Ready || len(st.Warnings) != 1 {
		t.Fatalf("health with the disk warning: %+v; want ready with one warning", st)
	}
	// Plenty of days, but free space under twice the reserve.
	free = 200 << 20
	if o = b.observe(t0.Add(61 * time.Minute)); !strings.Contains(o.Warning, "free on the data directory's file system") {
		t.Fatalf("free space under twice the reserve: warning %q", o.Warning)
	}
}

// TestDiskBudgetShown: the running appliance shows its disk budget in
// /api/status (by component), /metrics and `status`, and /readyz stays 200
// with a warning line when the free space nears the disk reserve.
func TestDiskBudgetShown(t *testing.T) {
	src := replay.New(replay.Config{Seed: 3, Restamp: true})
	src.Loops(replay.Generate(3, 200), 1)
	a := startAppliance(t, src, func(f *pipelineFlags, _ *healthRules) { f.diskReserve = 128 << 20 })
	a.drained(t, src.Counts().OnTime)
	o := a.observation(t)
	if o.Disk == nil || len(o.Disk.Components) == 0 || o.Disk.Components[0].Name != "broker.db" || o.Disk.Components[0].Bytes == 0 || o.Disk.FSBytes == 0 {
		t.Fatalf("/api/status disk: %+v", o.Disk)
	}
	var out strings.Builder
	printStatus(&out, o)
	if !strings.Contains(out.String(), "disk: ") || !strings.Contains(out.String(), "broker.db ") {
		t.Fatalf("status does not show the disk budget:\n%s", out.String())
	}
	_, metrics := a.get(t, "/metrics")
	for _, m := range []string{`lakehouse_disk_bytes{component="broker.db"}`, "lakehouse_disk_free_bytes", `lakehouse_broker_stored_bytes{topic="recentchange"}`} {
		if !strings.Contains(metrics, m) {
			t.Fatalf("/metrics has no %s", m)
		}
	}
	a.p.disk.mu.Lock()
	a.p.disk.statfs = func(string) (int64, int64, error) {
		return 30 << 30, a.p.flags.diskReserve + a.p.flags.diskReserve/2, nil
	}
	a.p.disk.mu.Unlock()
	waitFor(t, 3*time.Minute, "/readyz to warn of the disk reserve", func() bool {
		code, body := a.get(t, "/readyz")
		return code == http.StatusOK && strings.HasPrefix(body, "ready\n") && strings.Contains(body, "warning: disk:")
	})
}

// noTotals is health's totals for an observation without batches.
func noTotals(string) (queryTotals, bool) { return queryTotals{}, false }
