package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestProjectDisk: the broker grows until retention caps it (by size or by
// age, whichever is smaller), the rest for good; the days are those until
// free space falls to the reserve, scaled from the lake's density.
func TestProjectDisk(t *testing.T) {
	// A 2-day lake at 10 events a day: broker 20 bytes (10 a day), the
	// rest 10 (5 a day); projected at 10 events a day (scale 1).
	d := DiskUsage{Total: 30, Components: []DiskComponent{{Name: "broker.db", Bytes: 20}, {Name: "warehouse/bronze", Bytes: 10}}}
	for _, tc := range []struct {
		name  string
		plan  DiskPlan
		cap   float64
		days  float64
		met   bool // at least TargetDiskDays
		scale int  // RealPerDay
	}{
		// cap = min(0.2 x 100, 10 x 3 days) = 20 after 2 days; then 20 + 5t = 100 - 0: t = 16.
		{"size cap binds", DiskPlan{FSBytes: 100, BrokerShare: 0.2, BrokerAge: 72 * time.Hour}, 20, 16, false, 10},
		// cap = min(0.9 x 100, 10 x 1 day) = 10; 10 + 5t = 100 - 10: t = 16.
		{"age cap binds, reserve", DiskPlan{FSBytes: 100, BrokerShare: 0.9, BrokerAge: 24 * time.Hour, Reserve: 10}, 10, 16, false, 10},
		// cap 15 (share 0.75 of 20) is never reached: 15 t = 20.
		{"full before the cap", DiskPlan{FSBytes: 20, BrokerShare: 0.75}, 15, 20.0 / 15, false, 10},
		// Ten times the density: 100 and 50 a day; cap 200; 200 + 50 t = 2000: t = 36.
		{"scaled to the real rate", DiskPlan{FSBytes: 2000, BrokerShare: 0.1}, 200, 36, true, 100},
	} {
		tc.plan.RealPerDay = tc.scale
		p := projectDisk(d, 2, 10, tc.plan)
		if math.Abs(p.BrokerCap-tc.cap) > 1e-9 || math.Abs(p.Days-tc.days) > 1e-9 {
			t.Errorf("%s: got cap %v, %v days; want %v, %v (%+v)", tc.name, p.BrokerCap, p.Days, tc.cap, tc.days, p)
		}
		if v := diskVerdict(p); v.Met != tc.met || !strings.Contains(v.Value, "days") {
			t.Errorf("%s: verdict %+v, want met %v", tc.name, v, tc.met)
		}
	}
}
