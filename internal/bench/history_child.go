package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// childTimeout bounds a short-lived child (a query, verify): far above
// what they take on the longest history, so only a hung child hits it.
const childTimeout = time.Hour

// runChild runs the binary with args to completion (or until ctx ends, or
// the timeout), with its output copied to logPath, and returns how it
// went and what it wrote on stdout.
func runChild(ctx context.Context, launch func(...string) *exec.Cmd, logPath string, args ...string) (ChildRun, []byte) {
	return runChildFor(ctx, childTimeout, launch, logPath, args...)
}

func runChildFor(ctx context.Context, timeout time.Duration, launch func(...string) *exec.Cmd, logPath string, args ...string) (ChildRun, []byte) {
	r := ChildRun{Args: args, ExitCode: -1}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.Err = fmt.Sprintf("open log: %v", err)
		return r, nil
	}
	defer log.Close()
	fmt.Fprintf(log, "\n$ lakehouse %q\n", args)
	var stdout, both bytes.Buffer
	cmd := launch(args...)
	cmd.Stdout = io.MultiWriter(&stdout, &both, log)
	cmd.Stderr = io.MultiWriter(&both, log)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		r.Err = fmt.Sprintf("start: %v", err)
		return r, nil
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err = <-done
		r.Err = "interrupted: " + ctx.Err().Error()
	case <-timer.C:
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err = <-done
		r.Err = fmt.Sprintf("killed after %s", timeout)
	}
	r.Seconds = time.Since(start).Seconds()
	if ps := cmd.ProcessState; ps != nil {
		r.ExitCode = ps.ExitCode()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			r.PeakRSS = ru.Maxrss << 10 // KiB on Linux
		}
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && r.Err == "" {
		r.Err = err.Error()
	}
	r.Output = lastLines(both.String(), 20)
	return r, stdout.Bytes()
}
