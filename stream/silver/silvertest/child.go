package silvertest

import (
	"errors"
	"fmt"
	"lakehouse/internal/syncbuf"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Child is one run of a query as a child process: the test binary re-run
// with env telling it its role, which its TestMain hands to ChildMain.
type Child struct {
	cmd    *exec.Cmd
	out    *syncbuf.Buffer
	done   chan error
	err    error
	exited bool
}

// ChildMain is the first call of TestMain in a package whose tests run a
// query as a child process: when the environment variable env is set, this
// process is that child, and ChildMain runs body and exits (status 1, the
// error on stderr, if body fails) instead of returning to run the tests.
func ChildMain(env string, body func() error) {
	if os.Getenv(env) == "" {
		return
	}
	if err := body(); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// StartChild runs the test binary with env added to the environment (which
// makes its TestMain run the child's body, see ChildMain).
func StartChild(t testing.TB, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env...)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	return c
}

// Exited reports whether the child has ended (without waiting).
func (c *Child) Exited() bool {
	if c.exited {
		return true
	}
	select {
	case c.err = <-c.done:
		c.exited = true
	default:
	}
	return c.exited
}

// Wait returns the child's exit error; it SIGKILLs the child and fails the
// test if it runs longer than d.
func (c *Child) Wait(t testing.TB, d time.Duration) error {
	t.Helper()
	if c.exited {
		return c.err
	}
	select {
	case c.err = <-c.done:
	case <-time.After(d):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("child did not exit within %s; output:\n%s", d, Tail(c.Output(), 40))
	}
	c.exited = true
	return c.err
}

// Kill SIGKILLs the child (if it still runs) and waits for it. It returns
// true if the signal killed it, false if it had already exited.
func (c *Child) Kill(t testing.TB) bool {
	t.Helper()
	select {
	case c.err = <-c.done:
		c.exited = true
		return false
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	c.Wait(t, time.Minute)
	return WasKilled(c.err)
}

// Output returns what the child wrote so far.
func (c *Child) Output() string { return c.out.String() }

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
