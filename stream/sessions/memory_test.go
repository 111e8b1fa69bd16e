package sessions

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// The open sessions' memory is what a long run keeps: a page costs a page
// id in a small slice or a map (not its title), so the live heap per page
// stays within a bound whether sessions have a few pages or many. Live
// heap after runtime.GC, a count, not a timing.
func TestOpenSessionBytesPerPage(t *testing.T) {
	for _, tc := range []struct {
		editors, pages int
		maxPerPage     float64
	}{{20000, 3, 130}, {500, 400, 40}} {
		t.Run(fmt.Sprintf("%d pages", tc.pages), func(t *testing.T) {
			live := func() uint64 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			before := live()
			s := newState(0)
			for e := 0; e < tc.editors; e++ {
				for p := 0; p < tc.pages; p++ {
					s.add(edit{Wiki: "enwiki", User: fmt.Sprintf("Editor %06d", e),
						Title: fmt.Sprintf("A page title of typical length %06d/%04d", e, p),
						At:    t0.Add(time.Duration(p) * time.Second).UnixMicro(), Delta: 1}, 30*time.Minute, (4 * time.Hour).Microseconds())
				}
			}
			s.resetDelta()
			used := float64(live() - before)
			per := used / float64(tc.editors*tc.pages)
			t.Logf("%d editors × %d pages: %.0f KiB live, %.1f bytes per page", tc.editors, tc.pages, used/1024, per)
			if s.liveUnits() != tc.editors*(1+tc.pages) {
				t.Fatalf("state holds %d units, want %d", s.liveUnits(), tc.editors*(1+tc.pages))
			}
			if per > tc.maxPerPage {
				t.Errorf("%.1f bytes per open page, want at most %.0f", per, tc.maxPerPage)
			}
			runtime.KeepAlive(s)
		})
	}
}
