package silvertest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Child is one run of a query as a child process: the test binary re-run
// with -test.run naming the child's test function and env telling it its
// role.
type Child struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	done   chan error
	err    error
	exited bool
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartChild runs the test binary's test named test (an exact name) with
// env added to the environment.
func StartChild(t testing.TB, test string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	return c
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
