package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"lakehouse/table"
)

// BuildRecord says how a lake was built: the demo's arguments and how the
// build went. It is kept beside a kept lake (<name>.build.json), written
// only after the demo drained, so a lake without one is rebuilt.
type BuildRecord struct {
	Days         float64   `json:"days"`
	EventsPerDay int       `json:"events_per_day"`
	Recording    int       `json:"recording_events"`
	Loops        int       `json:"loops"`
	Events       int64     `json:"events"` // stream events the demo replayed: loops x recording
	Args         []string  `json:"args"`
	Version      string    `json:"version"` // the binary that built it
	BuiltAt      time.Time `json:"built_at"`
	Seconds      float64   `json:"seconds"`
	PeakRSS      int64     `json:"peak_rss_bytes"`
	ExitCode     int       `json:"exit_code"`
	// CheckFailures are the asset checks the demo's summary reported failed.
	CheckFailures []string `json:"check_failures,omitempty"`
	// Settle is the start that settled the lake after the demo (nil: not
	// settled; see history_settle.go).
	Settle *SettleRecord `json:"settle,omitempty"`
	// Reused says where the lake came from when this run did not build it
	// ("" : built by this run).
	Reused string `json:"reused,omitempty"`
}

// demoDone is the line the demo prints once it drained and summarised.
const demoDone = "demo: the lake is in "

// prepareLake returns the directory of a lake with days of history: the
// one cfg.Lakes names, a kept build with the same parameters, or one the
// demo builds now. rec describes it.
func prepareLake(ctx context.Context, cfg HistoryConfig, days float64, logs string, say func(string, ...any), rec *BuildRecord) (string, error) {
	if dir, ok := cfg.Lakes[days]; ok {
		if _, err := os.Stat(filepath.Join(dir, "broker.db")); err != nil {
			return "", fmt.Errorf("lake given for %g days: %w", days, err)
		}
		*rec = BuildRecord{Days: days, EventsPerDay: cfg.EventsPerDay, Reused: "given: " + dir}
		say("measuring the lake given, %s (on a copy)", dir)
		return dir, nil
	}
	name := lengthName(days, cfg.EventsPerDay)
	dir := filepath.Join(cfg.WorkDir, name)
	recPath := dir + ".build.json"
	loops := cfg.loops(days)
	want := BuildRecord{Days: days, EventsPerDay: cfg.EventsPerDay, Recording: cfg.Recording, Loops: loops,
		Events: int64(loops) * int64(cfg.Recording)}
	if cfg.Settle {
		want.Settle = &SettleRecord{}
	}
	if cfg.Keep && !cfg.Rebuild {
		if old, err := readBuildRecord(recPath); err == nil && old.sameAs(want) {
			*rec = old
			rec.Reused = fmt.Sprintf("kept build of %s", old.BuiltAt.Format(time.RFC3339))
			if old.Version != cfg.Version {
				rec.Reused += fmt.Sprintf(" by %s, not the binary measured (%s)", old.Version, cfg.Version)
			}
			say("reusing the lake built %s (%s)", old.BuiltAt.Format(time.RFC3339), dir)
			return dir, nil
		}
	}
	if err := os.Remove(recPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	span := time.Duration(days * float64(24*time.Hour)).Round(time.Second)
	// The demo's own bound on draining: far above its pace here (about
	// 50,000 events/s on 2 cores), so only a stuck pipeline hits it.
	timeout := max(5*time.Minute, time.Duration(float64(want.Events)/2000*float64(time.Second)))
	want.Args = []string{"demo", "--data", dir, "--events", strconv.Itoa(cfg.Recording), "--loops", strconv.Itoa(loops),
		"--span", span.String(), "--rate", "0", "--timeout", timeout.Round(time.Second).String()}
	say("building: lakehouse %s", strings.Join(want.Args, " "))
	run, out := runChildFor(ctx, timeout+5*time.Minute, cfg.Launch, filepath.Join(logs, "demo.log"), want.Args...)
	*rec = want
	rec.Version, rec.BuiltAt, rec.Seconds, rec.PeakRSS, rec.ExitCode = cfg.Version, time.Now().UTC(), run.Seconds, run.PeakRSS, run.ExitCode
	for _, line := range strings.Split(string(out), "\n") {
		if c, ok := strings.CutPrefix(line, "demo: asset check FAIL "); ok {
			rec.CheckFailures = append(rec.CheckFailures, c)
		}
	}
	if run.Err != "" || !strings.Contains(string(out), demoDone) {
		return "", fmt.Errorf("the demo did not build the lake (exit %d %s): %s; see %s", run.ExitCode, run.Err,
			oneLine(run.Output, 5), filepath.Join(logs, "demo.log"))
	}
	say("built in %.0f s, demo peak RSS %s, exit %d, %d checks failed", rec.Seconds, fmtBytes(rec.PeakRSS), rec.ExitCode, len(rec.CheckFailures))
	if cfg.Settle {
		st, err := settle(ctx, cfg, dir, filepath.Join(logs, "settle.log"), say)
		if err != nil {
			return "", fmt.Errorf("settle: %w", err)
		}
		rec.Settle = &st
	}
	js, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(recPath, append(js, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write build record: %w", err)
	}
	return dir, nil
}

func readBuildRecord(path string) (BuildRecord, error) {
	var r BuildRecord
	js, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(js, &r); err != nil {
		return r, fmt.Errorf("read %s: %w", path, err)
	}
	return r, nil
}

// sameAs reports whether a kept build has the parameters asked for.
func (r BuildRecord) sameAs(want BuildRecord) bool {
	return r.Days == want.Days && r.EventsPerDay == want.EventsPerDay && r.Recording == want.Recording && r.Loops == want.Loops &&
		(r.Settle != nil) == (want.Settle != nil)
}

// copyTree copies the lake src to dst (a fresh directory; a leftover of an
// interrupted run is removed first).
func copyTree(src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}

// evictPageCache writes back and drops the page cache of every file under
// dir (posix_fadvise DONTNEED on each), so the next reader of them reads
// the disk, as after a reboot. Other files' pages are left alone.
func evictPageCache(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", path, err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("fadvise %s: %w", path, err)
		}
		return nil
	})
}

// DiskUsage is a lake's disk space (allocated blocks) by component.
type DiskUsage struct {
	Total      int64           `json:"total_bytes"`
	PerDay     float64         `json:"per_day_bytes"`
	Components []DiskComponent `json:"components"`
	// AwaitingExpiry is the part of Total that is data files no table's
	// current snapshot holds: files compaction replaced, kept for the
	// snapshots before it until an expiry deletes them. A service expires
	// within seconds of a compaction (its streams commit every second),
	// but a lake the demo built in minutes stops with its last
	// compaction's inputs still on disk, so the projection leaves them out.
	AwaitingExpiry int64 `json:"awaiting_expiry_bytes"`
}

// DiskComponent is one part of a lake: broker.db, catalog.db, a warehouse
// namespace (warehouse/bronze), checkpoints, tmp, or other.
type DiskComponent struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// Bytes returns the component's bytes (0 when absent).
func (d DiskUsage) Bytes(name string) int64 {
	for _, c := range d.Components {
		if c.Name == name {
			return c.Bytes
		}
	}
	return 0
}

// diskUsage measures the lake dir of days of history.
func diskUsage(ctx context.Context, dir string, days float64) (DiskUsage, error) {
	by := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n := allocatedBytes(info)
		rel, _ := filepath.Rel(dir, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		comp := "other"
		switch {
		case len(parts) == 1 && (parts[0] == "broker.db" || parts[0] == "catalog.db"):
			comp = parts[0]
		case parts[0] == "warehouse" && len(parts) > 2:
			comp = "warehouse/" + strings.TrimSuffix(parts[1], ".db")
		case parts[0] == "checkpoints" || parts[0] == "tmp":
			comp = parts[0]
		}
		by[comp] += n
		return nil
	})
	u := DiskUsage{}
	for name, n := range by {
		u.Components = append(u.Components, DiskComponent{name, n})
		u.Total += n
	}
	sort.Slice(u.Components, func(i, j int) bool { return diskOrder(u.Components[i].Name) < diskOrder(u.Components[j].Name) })
	if days > 0 {
		u.PerDay = float64(u.Total) / days
	}
	if err != nil {
		return u, err
	}
	u.AwaitingExpiry, err = awaitingExpiry(ctx, filepath.Join(dir, "warehouse"))
	return u, err
}

// awaitingExpiry sums, over the warehouse's tables, the bytes of the data
// files under each table's data directory beyond its current snapshot's
// total-files-size (see DiskUsage.AwaitingExpiry).
func awaitingExpiry(ctx context.Context, warehouse string) (int64, error) {
	o := table.Observer{Dir: warehouse}
	idents, err := o.Tables()
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, ident := range idents {
		v, err := o.Table(ctx, ident)
		if err != nil {
			return 0, fmt.Errorf("awaiting expiry: %w", err)
		}
		var live int64
		for _, s := range v.Snapshots {
			if s.ID == v.CurrentSnapshotID {
				live, _ = strconv.ParseInt(s.Summary["total-files-size"], 10, 64)
			}
		}
		var onDisk int64
		data := filepath.Join(filepath.Dir(filepath.Dir(v.MetadataPath)), "data")
		err = filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			onDisk += info.Size()
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("awaiting expiry: %w", err)
		}
		sum += max(0, onDisk-live)
	}
	return sum, nil
}

// diskOrder sorts components: broker, catalog, the warehouse's
// namespaces in pipeline order, checkpoints, tmp, other.
func diskOrder(name string) string {
	for i, n := range []string{"broker.db", "catalog.db", "warehouse/bronze", "warehouse/silver", "warehouse/gold", "warehouse/ops"} {
		if name == n {
			return strconv.Itoa(i)
		}
	}
	switch name {
	case "checkpoints":
		return "8"
	case "tmp":
		return "9"
	case "other":
		return "z"
	}
	return "7" + name // another namespace
}

// oneLine joins the last n lines of s with " | ".
func oneLine(s string, n int) string {
	return strings.ReplaceAll(lastLines(s, n), "\n", " | ")
}
