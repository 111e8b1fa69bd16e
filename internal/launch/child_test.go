package launch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/internal/observe"
)

// sh runs script in /bin/sh as the child. A script's own children must
// not hold its output open past its end (exec, or redirect them): the
// child has ended only when its output has.
func sh(script string) *exec.Cmd { return exec.Command("/bin/sh", "-c", script) }

// TestStartReadsTheAnnouncedAddress: Start returns once the child prints
// observe.LinePrefix, with Base set from it; the child's output goes to
// the log after a line with its arguments; a child that exits 0 on
// SIGTERM stops without error.
func TestStartReadsTheAnnouncedAddress(t *testing.T) {
	log := filepath.Join(t.TempDir(), "logs", "child.log")
	c, err := Start(context.Background(), sh(`trap 'kill $!; exit 0' TERM; echo hello; echo "`+observe.LinePrefix+`http://127.0.0.1:9"; sleep 60 >/dev/null 2>&1 & wait`), log, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c.Base != "http://127.0.0.1:9" {
		t.Fatalf("Base %q", c.Base)
	}
	if ended, _ := c.Exited(); ended {
		t.Fatal("the child has ended while it sleeps")
	}
	if err := c.Stop(time.Minute); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `$ ["/bin/sh"`) || !strings.Contains(string(b), "hello\n") {
		t.Fatalf("log:\n%s", b)
	}
	if err := c.Stop(time.Minute); err == nil || !strings.Contains(err.Error(), "already exited") {
		t.Fatalf("Stop of an ended child: %v, want it said", err)
	}
}

// TestExitBeforeServing: a child that exits before announcing fails Start
// with its exit and the log's path.
func TestExitBeforeServing(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	_, err := Start(context.Background(), sh("echo boom; exit 3"), log, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "exited before serving") || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), log) {
		t.Fatalf("got %v", err)
	}
}

// TestKillSeesTheFaultMarker: a fault marker printed before the kill is
// seen once the child has ended, and the child died of SIGKILL; a marker
// not printed is not.
func TestKillSeesTheFaultMarker(t *testing.T) {
	c, err := Start(context.Background(), sh(`echo "FAULT bronze.commit"; echo "`+observe.LinePrefix+`http://x"; exec sleep 60`), filepath.Join(t.TempDir(), "c.log"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.Kill()
	if !c.KilledBySignal() {
		t.Fatalf("not killed by SIGKILL: %v", c.Wait())
	}
	if !c.SawFault("bronze.commit") || c.SawFault("silver.commit") {
		t.Fatal("fault markers: want bronze.commit seen and silver.commit not")
	}
}

// TestServingGivesUp: a child that never announces is killed after the
// wait.
func TestServingGivesUp(t *testing.T) {
	c, err := Spawn(sh("exec sleep 60"), filepath.Join(t.TempDir(), "c.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Serving(context.Background(), 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not announce") {
		t.Fatalf("got %v", err)
	}
	if !c.KilledBySignal() {
		t.Fatalf("the silent child was not killed: %v", c.Wait())
	}
}

// TestFreshDir: an absent or empty directory is accepted (and created),
// one holding anything is refused.
func TestFreshDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := FreshDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := FreshDir(dir); err != nil {
		t.Fatalf("empty: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broker.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := FreshDir(dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("non-empty: %v", err)
	}
	if err := FreshDir(""); err == nil {
		t.Fatal("no directory accepted")
	}
}
