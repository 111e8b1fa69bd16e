// Package diskbudget measures the appliance's data directory on its file
// system: what each component takes (broker.db, catalog.db, checkpoints,
// the warehouse when local, other), how fast the directory grows, and how
// long the free space lasts at that pace before the disk reserve stops
// ingest. It walks the directory at most once a minute, however often it
// is asked.
//
// What survives a crash: nothing; the growth is measured again from the
// samples taken after a start.
package diskbudget

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"lakehouse/internal/humanize"
	"lakehouse/internal/observe"
)

type point struct {
	at   time.Time
	used int64
}

// Disk budget rules. The directory is walked at most every walkEvery (a
// lake weeks old holds thousands of files); growth needs MinSpan of
// samples, and is taken over at most window of them.
const (
	walkEvery = time.Minute
	MinSpan   = 10 * time.Minute
	window    = 24 * time.Hour
	warnDays  = 7 // fewer days left than this at the current growth: a warning
)

// Budget measures and remembers the data directory's disk use. Its
// methods are safe for concurrent use.
type Budget struct {
	dir, warehouse string // warehouse: a local warehouse outside dir ("" when inside it or not local)
	reserve        int64

	mu        sync.Mutex
	statfs    func(dir string) (total, free int64, err error) // SetStatfs replaces it
	cur       observe.Disk
	sampledAt time.Time // when cur.Components and cur.Used were measured
	history   []point   // the samples growth is taken over
}

// New measures data directory dir; warehouse is --warehouse (a
// local one outside dir is counted as the warehouse component; one on an
// object store is not on this disk).
func New(dir, warehouse string, reserve int64) *Budget {
	local := ""
	if w, ok := strings.CutPrefix(warehouse, "file://"); ok {
		if rel, err := filepath.Rel(dir, w); err != nil || strings.HasPrefix(rel, "..") {
			local = w
		}
	}
	return &Budget{dir: dir, warehouse: local, reserve: reserve, statfs: statfsBytes}
}

// SetStatfs replaces how the file system's size and free bytes are read
// (a test's full disk).
func (b *Budget) SetStatfs(f func(dir string) (total, free int64, err error)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.statfs = f
}

func statfsBytes(dir string) (total, free int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize), nil
}

// Observe returns the budget at now, walking the directory when the last
// walk is walkEvery old. The file system's free space is read every time.
func (b *Budget) Observe(now time.Time) observe.Disk {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sampledAt.IsZero() || now.Sub(b.sampledAt) >= walkEvery {
		b.cur.Components, b.cur.Used = b.walk()
		b.sampledAt = now
		b.history = append(b.history, point{at: now, used: b.cur.Used})
		for len(b.history) > 2 && now.Sub(b.history[1].at) >= window {
			b.history = b.history[1:]
		}
	}
	o := b.cur
	o.Dir, o.Reserve = b.dir, b.reserve
	o.FSBytes, o.Free, _ = b.statfs(b.dir)
	o.GrowthDay, o.DaysLeft = observe.Float(math.NaN()), observe.Float(math.NaN())
	if h := b.history; len(h) >= 2 {
		first, last := h[0], h[len(h)-1]
		if span := last.at.Sub(first.at); span >= MinSpan {
			o.MeasuredS = span.Seconds()
			g := float64(last.used-first.used) / span.Hours() * 24
			o.GrowthDay = observe.Float(g)
			if g > 0 {
				o.DaysLeft = observe.Float(float64(max(0, o.Free-o.Reserve)) / g)
			}
		}
	}
	o.Warning = warning(o)
	o.Components = append([]observe.DiskPart(nil), o.Components...)
	return o
}

// warning says when the reserve is near: free space under twice the
// reserve, or fewer than warnDays left at the measured growth.
func warning(o observe.Disk) string {
	switch {
	case o.FSBytes == 0:
		return ""
	case o.Reserve > 0 && o.Free < 2*o.Reserve:
		return "disk: " + humanize.Bytes(o.Free) + " free on the data directory's file system, the reserve of " + humanize.Bytes(o.Reserve) + " stops ingest below it; free space or raise --retention-bytes' trimming"
	case !math.IsNaN(float64(o.DaysLeft)) && float64(o.DaysLeft) < warnDays:
		return "disk: " + strconv.FormatFloat(float64(o.DaysLeft), 'f', 1, 64) + " days left before the disk reserve at the data directory's growth of " + humanize.Bytes(int64(o.GrowthDay)) + "/day"
	}
	return ""
}

// walk returns the bytes each component of the data directory takes (the
// blocks allocated, as du counts them).
func (b *Budget) walk() ([]observe.DiskPart, int64) {
	sizes := map[string]int64{}
	var total int64
	_ = filepath.WalkDir(b.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a file removed under the walk, an unreadable directory: not counted
		}
		n := allocated(d)
		rel, _ := filepath.Rel(b.dir, path)
		top := rel
		if i := indexSep(rel); i >= 0 {
			top = rel[:i]
		}
		switch top {
		case "broker.db", "catalog.db", "checkpoints", "warehouse":
		default:
			top = "other"
		}
		sizes[top] += n
		total += n
		return nil
	})
	if b.warehouse != "" {
		_ = filepath.WalkDir(b.warehouse, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				sizes["warehouse"] += allocated(d)
			}
			return nil
		})
	}
	var parts []observe.DiskPart
	for _, name := range []string{"broker.db", "catalog.db", "checkpoints", "warehouse", "other"} {
		if n, ok := sizes[name]; ok {
			parts = append(parts, observe.DiskPart{Name: name, Bytes: n})
		}
	}
	return parts, total
}

func indexSep(s string) int {
	for i := 0; i < len(s); i++ {
		if os.IsPathSeparator(s[i]) {
			return i
		}
	}
	return -1
}

// allocated is a file's allocated bytes (st_blocks), or its size where the
// platform does not say.
func allocated(d fs.DirEntry) int64 {
	info, err := d.Info()
	if err != nil {
		return 0
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return info.Size()
}
