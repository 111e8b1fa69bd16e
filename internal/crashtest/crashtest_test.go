package crashtest_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"lakehouse/internal/crashtest"
	"lakehouse/internal/fault"
)

func TestMain(m *testing.M) {
	os.Exit(crashtest.Main(m, map[string]crashtest.Role{
		// count prints "N i" for i = 0.. forever, or up to the setting "n".
		"count": func(s crashtest.Spec) error {
			s.Arm()
			for i := 0; s.Get("n") == "" || i < s.Int("n"); i++ {
				fmt.Printf("N %d\n", i)
				fault.Hit("crashtest.count")
				time.Sleep(time.Millisecond)
			}
			return nil
		},
		"fail": func(s crashtest.Spec) error { return errors.New("failed: " + s.Get("why")) },
	}))
}

// TestChildKilledFromOutside: a child runs its role with its settings,
// the parent sees its lines as it writes them and its SIGKILL ends it.
func TestChildKilledFromOutside(t *testing.T) {
	c := crashtest.Start(t, "count")
	if !c.WaitFor("N ", 5, time.Minute) || c.Count("N ") < 5 {
		t.Fatalf("child wrote %d lines, want 5; output:\n%s", len(c.Lines("N ")), crashtest.Tail(c.Output(), 20))
	}
	if !c.Kill(t) {
		t.Fatalf("the child was not ended by SIGKILL; output:\n%s", crashtest.Tail(c.Output(), 20))
	}
	for i, l := range c.Lines("N ") {
		if l != fmt.Sprint(i) {
			t.Fatalf("line %d is %q", i, l)
		}
	}
}

// TestHookKillsChild: the hook the settings name, armed by the role, kills
// the child at its (skip+1)-th hit, and the child says so.
func TestHookKillsChild(t *testing.T) {
	c := crashtest.Start(t, "count", "hook", "crashtest.count", "skip", "3")
	err := c.Wait(t, time.Minute)
	if !crashtest.WasKilled(err) || !c.Fired("crashtest.count") {
		t.Fatalf("child ended with %v, want SIGKILL by the hook; output:\n%s", err, c.Output())
	}
	if n := len(c.Lines("N ")); n != 4 {
		t.Fatalf("child wrote %d lines before the hook killed it, want 4", n)
	}
}

// TestChildEndings: a role that returns ends with status 0, one that
// fails with status 1 and its error, an unknown role with status 2.
func TestChildEndings(t *testing.T) {
	for _, tc := range []struct {
		role     string
		settings []string
		status   int
		output   string
	}{
		{"count", []string{"n", "2"}, 0, "N 1\n"},
		{"fail", []string{"why", "on purpose"}, 1, "child: failed: on purpose"},
		{"nobody", nil, 2, `no role "nobody"`},
	} {
		c := crashtest.Start(t, tc.role, tc.settings...)
		err := c.Wait(t, time.Minute)
		status := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if status != tc.status || !strings.Contains(c.Output(), tc.output) || crashtest.WasKilled(err) {
			t.Errorf("role %s: status %d, want %d; output %q, want it to hold %q", tc.role, status, tc.status, c.Output(), tc.output)
		}
	}
}

// TestKillAfterAnEndedChild: an exit is read as often as asked, from any
// goroutine: a KillAfter timer that fires after the child ended on its
// own takes nothing away from Wait, Exited and Kill.
func TestKillAfterAnEndedChild(t *testing.T) {
	c := crashtest.Start(t, "count", "n", "1")
	if err := c.Wait(t, time.Minute); err != nil {
		t.Fatalf("a child that ends on its own: Wait returned %v, want nil", err)
	}
	c.KillAfter(time.Millisecond)
	time.Sleep(100 * time.Millisecond) // the timer has fired
	if err := c.Wait(t, time.Minute); err != nil || !c.Exited() || c.Kill(t) {
		t.Fatalf("after the timer: Wait %v, Exited %v; want nil, true, and Kill finding nothing to kill", err, c.Exited())
	}
}
