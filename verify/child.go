package verify

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"lakehouse/internal/observe"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is one run of the appliance as a separate process.
type child struct {
	cmd  *exec.Cmd
	base string // http://host:port of its status surface
	log  *os.File

	mu     sync.Mutex
	faults []string // fault markers seen on its output

	done    chan struct{}
	waitErr error
}

// startChild starts cmd, copies its output to logPath, and waits until it
// announces its HTTP surface (or exits first).
func startChild(ctx context.Context, cmd *exec.Cmd, logPath string) (*child, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open child log: %w", err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	c := &child{cmd: cmd, log: f, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start appliance: %w", err)
	}
	addr := make(chan string, 1)
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
				case addr <- strings.TrimSpace(rest):
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
		close(c.done)
	}()
	select {
	case a := <-addr:
		c.base = a
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("appliance exited before serving status (%v); see %s", c.waitErr, logPath)
	case <-time.After(2 * time.Minute):
		c.kill()
		return nil, fmt.Errorf("appliance did not announce its HTTP surface within 2m; see %s", logPath)
	case <-ctx.Done():
		c.kill()
		return nil, ctx.Err()
	}
}

// kill SIGKILLs the child and waits for it.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
	c.log.Close()
}

// stop asks the child to shut down (SIGTERM) and waits; it kills it after
// the grace period.
func (c *child) stop(grace time.Duration) error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		c.kill()
		return fmt.Errorf("appliance did not stop within %s after SIGTERM", grace)
	}
	c.log.Close()
	if c.waitErr != nil {
		return fmt.Errorf("appliance exited with %w", c.waitErr)
	}
	return nil
}

// exited reports whether the child has ended, and how.
func (c *child) exited() (bool, error) {
	select {
	case <-c.done:
		return true, c.waitErr
	default:
		return false, nil
	}
}

// killedBySignal reports whether the child died of SIGKILL.
func (c *child) killedBySignal() bool {
	var ee *exec.ExitError
	if !errors.As(c.waitErr, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func (c *child) sawFault(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.faults {
		if f == name {
			return true
		}
	}
	return false
}
