package marts

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// TestScheduledJobsBoundDuckDB: the DuckDB of a refresh or check runs under
// the configured memory limit and threads and spills to the configured
// directory (the marts read all of silver, so unbounded their memory grows
// with the lake); by default it runs on one thread.
func TestScheduledJobsBoundDuckDB(t *testing.T) {
	ctx := context.Background()
	lake, log := fixtureLake(t)
	tmp := filepath.Join(t.TempDir(), "duck")
	m := New(lake, &log, Config{Logger: slog.New(slog.DiscardHandler), DuckMemoryLimit: "123MB", DuckTempDir: tmp, DuckThreads: 3})
	d, err := m.openDuck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var limit, dir string
	var threads int
	if err := d.db.QueryRowContext(ctx, "SELECT current_setting('memory_limit'), current_setting('temp_directory'), current_setting('threads')").Scan(&limit, &dir, &threads); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(limit, "117") { // DuckDB reports 123 MB as 117.3 MiB
		t.Errorf("memory_limit: got %q, want 123MB (117.3 MiB)", limit)
	}
	if dir != tmp {
		t.Errorf("temp_directory: got %q, want %q", dir, tmp)
	}
	if threads != 3 {
		t.Errorf("threads: got %d, want 3", threads)
	}
	m2 := New(lake, &log, Config{Logger: slog.New(slog.DiscardHandler)})
	if m2.cfg.DuckMemoryLimit != DefaultDuckMemoryLimit || m2.cfg.DuckTempDir == "" || m2.cfg.DuckThreads != DefaultDuckThreads {
		t.Errorf("defaults: memory limit %q, temp dir %q, threads %d", m2.cfg.DuckMemoryLimit, m2.cfg.DuckTempDir, m2.cfg.DuckThreads)
	}
	d2, err := m2.openDuck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if err := d2.db.QueryRowContext(ctx, "SELECT current_setting('threads')").Scan(&threads); err != nil {
		t.Fatal(err)
	}
	if threads != 1 {
		t.Errorf("default threads: got %d, want 1", threads)
	}
}
