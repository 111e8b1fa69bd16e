package diskbudget

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDiskBudgetGrowthAndDaysLeft: the budget splits the data directory
// by component (allocated bytes), says nothing of growth before
// MinSpan of samples, then the growth per day and the days left
// before the reserve at that pace; it warns once fewer than warnDays are left, or once free
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
	b := New(dir, "", 128<<20)
	b.SetStatfs(func(string) (int64, int64, error) { return 30 * gib, free, nil })
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	o := b.Observe(t0)
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
	// last about 6.6 days: fewer than warnDays.
	write("broker.db2", 64<<20)
	o = b.Observe(t0.Add(5 * time.Minute))
	if !math.IsNaN(float64(o.GrowthDay)) {
		t.Fatalf("growth after 5 minutes of samples: %v, want none yet", o.GrowthDay)
	}
	o = b.Observe(t0.Add(time.Hour))
	wantGrowth := float64(64<<20) * 24
	if g := float64(o.GrowthDay); math.Abs(g-wantGrowth) > wantGrowth/20 {
		t.Fatalf("growth %.0f bytes/day, want about %.0f", g, wantGrowth)
	}
	wantLeft := float64(free-128<<20) / wantGrowth
	if l := float64(o.DaysLeft); math.Abs(l-wantLeft) > wantLeft/20 || !strings.Contains(o.Warning, "days left before the disk reserve") {
		t.Fatalf("days left %.2f (want about %.2f), warning %q", l, wantLeft, o.Warning)
	}
	// Plenty of days, but free space under twice the reserve.
	free = 200 << 20
	if o = b.Observe(t0.Add(61 * time.Minute)); !strings.Contains(o.Warning, "free on the data directory's file system") {
		t.Fatalf("free space under twice the reserve: warning %q", o.Warning)
	}
}
