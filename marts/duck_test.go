package marts

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestScheduledJobsBoundDuckDB: the DuckDB of a refresh or check runs under
// the configured memory limit and spills to the configured directory (the
// marts read all of silver, so unbounded their memory grows with the lake).
func TestScheduledJobsBoundDuckDB(t *testing.T) {
	ctx := context.Background()
	lake, log := fixtureLake(t)
	tmp := filepath.Join(t.TempDir(), "duck")
	m := New(lake, &log, Config{Logger: quietLogger(), DuckMemoryLimit: "123MB", DuckTempDir: tmp})
	d, err := m.openDuck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var limit, dir string
	if err := d.db.QueryRowContext(ctx, "SELECT current_setting('memory_limit'), current_setting('temp_directory')").Scan(&limit, &dir); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(limit, "117") { // DuckDB reports 123 MB as 117.3 MiB
		t.Errorf("memory_limit: got %q, want 123MB (117.3 MiB)", limit)
	}
	if dir != tmp {
		t.Errorf("temp_directory: got %q, want %q", dir, tmp)
	}
	if m2 := New(lake, &log, Config{Logger: quietLogger()}); m2.cfg.DuckMemoryLimit != DefaultDuckMemoryLimit || m2.cfg.DuckTempDir == "" {
		t.Errorf("defaults: memory limit %q, temp dir %q", m2.cfg.DuckMemoryLimit, m2.cfg.DuckTempDir)
	}
}
