package launch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"lakehouse/internal/observe"
)

// Child is one run of the appliance as a separate process.
type Child struct {
	Cmd     *exec.Cmd
	Base    string    // http://host:port of its HTTP surface, as it announced it
	Started time.Time // when the process started
	log     *os.File
	addr    chan string // the announced address, once

	mu     sync.Mutex
	faults []string // fault markers seen on its output

	done    chan struct{}
	waitErr error
}

// Start starts cmd (Spawn) and waits, up to wait, until it announces its
// HTTP surface (Serving).
func Start(ctx context.Context, cmd *exec.Cmd, logPath string, wait time.Duration) (*Child, error) {
	c, err := Spawn(cmd, logPath)
	if err != nil {
		return nil, err
	}
	if err := c.Serving(ctx, wait); err != nil {
		return nil, err
	}
	return c, nil
}

// Spawn starts cmd and appends its output to logPath, after a line with
// its arguments; it does not wait for anything.
func Spawn(cmd *exec.Cmd, logPath string) (*Child, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("create the child's log directory: %w", err)
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the child's log: %w", err)
	}
	fmt.Fprintf(f, "\n$ %q\n", cmd.Args)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	c := &Child{Cmd: cmd, log: f, addr: make(chan string, 1), done: make(chan struct{})}
	c.Started = time.Now()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start the appliance: %w", err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			if rest, ok := strings.CutPrefix(line, observe.LinePrefix); ok {
				select {
				case c.addr <- strings.TrimSpace(rest):
				default:
				}
			}
			if rest, ok := strings.CutPrefix(line, "FAULT "); ok {
				c.mu.Lock()
				c.faults = append(c.faults, strings.TrimSpace(rest))
				c.mu.Unlock()
			}
		}
		_, _ = io.Copy(io.Discard, pr) // never block the child on a full pipe
	}()
	go func() {
		c.waitErr = cmd.Wait()
		pw.Close()
		<-scanned // every line, including a FAULT marker, has been seen
		f.Close()
		close(c.done)
	}()
	return c, nil
}

// Serving waits, up to wait, until the child announces its HTTP surface
// (observe.LinePrefix) and sets Base. It kills the child when the wait or
// ctx ends first, and fails when the child exits first.
func (c *Child) Serving(ctx context.Context, wait time.Duration) error {
	select {
	case a := <-c.addr:
		c.Base = a
		return nil
	case <-c.done:
		return fmt.Errorf("the appliance exited before serving HTTP (%v); see %s", c.waitErr, c.LogPath())
	case <-time.After(wait):
		c.Kill()
		return fmt.Errorf("the appliance did not announce its HTTP surface within %s; see %s", wait, c.LogPath())
	case <-ctx.Done():
		c.Kill()
		return ctx.Err()
	}
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.Cmd.Process.Pid }

// LogPath is the file the child's output goes to (closed once it exits).
func (c *Child) LogPath() string { return c.log.Name() }

// Done is closed once the child has exited and its output is read.
func (c *Child) Done() <-chan struct{} { return c.done }

// Wait waits for the child to exit and returns how it ended.
func (c *Child) Wait() error {
	<-c.done
	return c.waitErr
}

// Kill SIGKILLs the child and waits for it.
func (c *Child) Kill() {
	_ = c.Cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// Stop asks the child to shut down (SIGTERM) and waits up to grace, then
// kills it. An error says it had already exited, did not stop in time, or
// exited with an error.
func (c *Child) Stop(grace time.Duration) error {
	if ended, err := c.Exited(); ended {
		return fmt.Errorf("the appliance had already exited: %v", err)
	}
	_ = c.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		c.Kill()
		return fmt.Errorf("the appliance did not stop within %s of SIGTERM", grace)
	}
	if c.waitErr != nil {
		return fmt.Errorf("the appliance exited with %w after SIGTERM", c.waitErr)
	}
	return nil
}

// Exited reports whether the child has ended, and how.
func (c *Child) Exited() (bool, error) {
	select {
	case <-c.done:
		return true, c.waitErr
	default:
		return false, nil
	}
}

// KilledBySignal reports whether the child died of SIGKILL.
func (c *Child) KilledBySignal() bool {
	var ee *exec.ExitError
	if !errors.As(c.waitErr, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// SawFault reports whether the child printed the fault marker of name
// ("FAULT name", internal/fault) before it ended.
func (c *Child) SawFault(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.faults {
		if f == name {
			return true
		}
	}
	return false
}

// FreshDir creates dir, or accepts it when it exists and is empty: a
// harness's appliance must start on a data directory of its own.
func FreshDir(dir string) error {
	if dir == "" {
		return errors.New("no data directory")
	}
	entries, err := os.ReadDir(dir)
	if err == nil && len(entries) > 0 {
		return fmt.Errorf("data directory %s is not empty (a fresh one is needed)", dir)
	}
	return os.MkdirAll(dir, 0o755)
}
