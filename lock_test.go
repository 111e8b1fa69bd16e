package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lakehouse/internal/boltfile"
	"lakehouse/internal/localapi"
)

// TestHeldDataDirectoryNamesHolder: a second process on a data directory
// an appliance holds is told the holder's pid (from the owner file the
// appliance wrote beside broker.db) and what to do; the owner file is
// removed when the appliance stops.
func TestHeldDataDirectoryNamesHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the appliance as a child process")
	}
	dir := filepath.Join(t.TempDir(), "lake")
	child := selfCommand("run", "--data", dir, "--no-ingest", "--http", "off", "--refresh", "0")
	var clog strings.Builder
	child.Stdout, child.Stderr = &clog, &clog
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Signal(syscall.SIGTERM); _ = child.Wait() }()
	waitFor(t, time.Minute, "the appliance's local endpoint", func() bool {
		_, err := os.Stat(filepath.Join(dir, localapi.File))
		return err == nil
	})
	owner := filepath.Join(dir, "broker.db.owner")
	var o boltfile.Owner
	if b, err := os.ReadFile(owner); err != nil || json.Unmarshal(b, &o) != nil || o.PID != child.Process.Pid || o.Command != "lakehouse run" {
		t.Fatalf("owner file %s: %+v (%v); want pid %d, lakehouse run\n%s", owner, o, err, child.Process.Pid, clog.String())
	}
	var out strings.Builder
	code := run([]string{"run", "--data", dir, "--no-ingest", "--http", "off", "--refresh", "0"}, &out, &out)
	for _, want := range []string{fmt.Sprintf("locked by pid %d (lakehouse run, since ", child.Process.Pid),
		fmt.Sprintf("stop pid %d first", child.Process.Pid), "or use another --data than " + dir} {
		if code != 1 || !strings.Contains(out.String(), want) {
			t.Errorf("a second run on %s: exit %d, want 1 and %q in:\n%s", dir, code, want, out.String())
		}
	}
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("appliance: %v\n%s", err, clog.String())
	}
	for _, f := range []string{"broker.db.owner", "catalog.db.owner"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s after the appliance stopped: %v", f, err)
		}
	}
}
