// Package crashtest is the one harness of the tests that kill a process:
// the test binary runs itself again as a child, in a role its package's
// TestMain registered with Main, told by one environment variable (Env:
// the role and its settings, JSON). Settings "hook" and "skip" name a
// fault hook (internal/fault) the role arms with Spec.Arm where its
// protocol begins. The
// parent reads what the child writes, kills it with SIGKILL or waits for
// an armed hook to, and checks how it ended (WasKilled, Fired).
//
// It is imported by tests only and owns nothing that survives a crash.
package crashtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"lakehouse/internal/fault"
	"lakehouse/internal/syncbuf"
)

// Env is the environment variable that makes a test binary a child: its
// value is a Spec in JSON.
const Env = "LAKEHOUSE_CRASHTEST"

// Spec is what a child is told: its role and its settings.
type Spec struct {
	Role     string            `json:"role"`
	Settings map[string]string `json:"settings,omitempty"`
}

// Get returns the setting key ("" when absent).
func (s Spec) Get(key string) string { return s.Settings[key] }

// Arm arms the fault hook the settings "hook" and "skip" name, to kill the
// process at its (skip+1)-th hit; it reports whether there was one.
func (s Spec) Arm() bool {
	if s.Get("hook") == "" {
		return false
	}
	fault.Arm(s.Get("hook"), s.Int("skip"))
	return true
}

// Int returns the setting key as an int (0 when absent or not a number).
func (s Spec) Int(key string) int {
	n, _ := strconv.Atoi(s.Settings[key])
	return n
}

// Role is a child's body. Main exits with status 0 when it returns nil,
// with status 1 and the error on stderr otherwise.
type Role func(Spec) error

// Main is called by TestMain in a package whose tests run children: in a
// child (Env set) it runs the role the spec names and exits; otherwise it
// runs the tests and returns m.Run's code, for TestMain's os.Exit.
func Main(m *testing.M, roles map[string]Role) int {
	v := os.Getenv(Env)
	if v == "" {
		return m.Run()
	}
	var s Spec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		fmt.Fprintf(os.Stderr, "child: %s: %v\n", Env, err)
		os.Exit(2)
	}
	role, ok := roles[s.Role]
	if !ok {
		fmt.Fprintf(os.Stderr, "child: no role %q in this test binary\n", s.Role)
		os.Exit(2)
	}
	if err := role(s); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return 0
}

// Child is one run of the test binary as a child process. Its methods may
// be called from any goroutine.
type Child struct {
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	done chan struct{} // closed once the child has ended and err is set
	err  error
}

// Start runs the test binary as a child in role with settings (key, value
// pairs; "hook" and "skip" for Spec.Arm). Its stdout and stderr go to one
// buffer, Output.
func Start(t testing.TB, role string, settings ...string) *Child {
	t.Helper()
	if len(settings)%2 != 0 {
		t.Fatalf("crashtest.Start(%q): settings come in key, value pairs: %q", role, settings)
	}
	s := Spec{Role: role, Settings: map[string]string{}}
	for i := 0; i < len(settings); i += 2 {
		s.Settings[settings[i]] = settings[i+1]
	}
	spec, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), Env+"="+string(spec))
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c
}

// Exited reports whether the child has ended (without waiting).
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Wait returns the child's exit error; it SIGKILLs the child and fails the
// test if it runs longer than d.
func (c *Child) Wait(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(d):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("child did not exit within %s; output:\n%s", d, Tail(c.Output(), 40))
	}
	return c.err
}

// Kill SIGKILLs the child (if it still runs) and waits for it. It returns
// true if the signal killed it, false if it had already exited.
func (c *Child) Kill(t testing.TB) bool {
	t.Helper()
	if c.Exited() {
		return false
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	return WasKilled(c.Wait(t, time.Minute))
}

// Terminate sends the child SIGTERM (a clean stop), if it still runs.
func (c *Child) Terminate() {
	if !c.Exited() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
}

// KillAfter SIGKILLs the child once d has passed, unless it ended first.
func (c *Child) KillAfter(d time.Duration) {
	time.AfterFunc(d, func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Signal(syscall.SIGKILL)
		}
	})
}

// WaitFor waits until n lines of the child's output hold substr, or the
// child ended, or d passed; it returns whether the lines are there.
func (c *Child) WaitFor(substr string, n int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if c.Count(substr) >= n {
			return true
		}
		if c.Exited() || time.Now().After(deadline) {
			return c.Count(substr) >= n
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Count returns how many whole lines of the output so far hold substr.
func (c *Child) Count(substr string) int {
	n := 0
	for line := range strings.Lines(c.whole()) {
		if strings.Contains(line, substr) {
			n++
		}
	}
	return n
}

// Output returns what the child wrote so far.
func (c *Child) Output() string { return c.out.String() }

// Lines returns the whole lines of the output so far that start with
// prefix, without it.
func (c *Child) Lines(prefix string) []string {
	var lines []string
	for line := range strings.Lines(c.whole()) {
		if rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), prefix); ok {
			lines = append(lines, rest)
		}
	}
	return lines
}

// whole is the output up to its last newline: a line the child is still
// writing is left out.
func (c *Child) whole() string {
	out := c.Output()
	return out[:strings.LastIndexByte(out, '\n')+1]
}

// Fired reports whether the child's output shows the fault hook name
// killing it (fault.Marker).
func (c *Child) Fired(name string) bool {
	return strings.Contains(c.Output(), fault.Marker(name))
}

// WasKilled reports whether err is the exit of a process killed by SIGKILL.
func WasKilled(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
