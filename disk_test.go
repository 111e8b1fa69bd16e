package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/dashboard"
	"lakehouse/internal/health"
)

// TestDiskBudgetShown: the running appliance shows its disk budget in
// /api/status (by component), /metrics and `status`, and /readyz stays 200
// with a warning line when the free space nears the disk reserve.
func TestDiskBudgetShown(t *testing.T) {
	src := replay.New(replay.Config{Seed: 3, Restamp: true})
	src.Loops(replay.Generate(3, 200), 1)
	a := startAppliance(t, src, func(f *appliance.Config, _ *health.Rules) { f.DiskReserve = 128 << 20 })
	a.drained(t, src.Counts().OnTime)
	o := a.observation(t)
	if o.Disk == nil || len(o.Disk.Components) == 0 || o.Disk.Components[0].Name != "broker.db" || o.Disk.Components[0].Bytes == 0 || o.Disk.FSBytes == 0 {
		t.Fatalf("/api/status disk: %+v", o.Disk)
	}
	var out strings.Builder
	dashboard.WriteText(&out, o)
	if !strings.Contains(out.String(), "disk: ") || !strings.Contains(out.String(), "broker.db ") {
		t.Fatalf("status does not show the disk budget:\n%s", out.String())
	}
	_, metrics := a.get(t, "/metrics")
	for _, m := range []string{`lakehouse_disk_bytes{component="broker.db"}`, "lakehouse_disk_free_bytes", `lakehouse_broker_stored_bytes{topic="recentchange"}`} {
		if !strings.Contains(metrics, m) {
			t.Fatalf("/metrics has no %s", m)
		}
	}
	a.p.Disk().SetStatfs(func(string) (int64, int64, error) {
		return 30 << 30, a.p.Config().DiskReserve + a.p.Config().DiskReserve/2, nil
	})
	waitFor(t, 3*time.Minute, "/readyz to warn of the disk reserve", func() bool {
		code, body := a.get(t, "/readyz")
		return code == http.StatusOK && strings.HasPrefix(body, "ready\n") && strings.Contains(body, "warning: disk:")
	})
}
