package main

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lakehouse/internal/syncbuf"
)

// TestDemoCtrlC: Ctrl-C on the demo before its summary is one line saying
// what it left and exit status 130; on demo --follow after the summary it
// is one line and exit status 0. Never "context canceled".
func TestDemoCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo as a child process")
	}
	for _, tc := range []struct {
		name, after string
		args        []string
		code        int
		want        string
	}{
		{"mid-replay", "demo: broker ", []string{"--rate", "100"}, exitInterrupted, "lakehouse demo: interrupted: the demo stopped before its summary; the lake in "},
		{"following", "demo: following", []string{"--events", "300", "--loops", "1", "--follow"}, 0, "demo: stopped; the lake in "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "lake")
			cmd := selfCommand(append([]string{"demo", "--data", dir, "--http", "off"}, tc.args...)...)
			var out syncbuf.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 2*time.Minute, "the demo to print "+tc.after, func() bool { return strings.Contains(out.String(), tc.after) })
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			s := out.String()
			if code != tc.code || !strings.Contains(s, tc.want) || strings.Contains(s, "context canceled") {
				t.Fatalf("exit %d, want %d and %q, without \"context canceled\":\n%s", code, tc.code, tc.want, s)
			}
		})
	}
}

// TestHoldDashboard: on a terminal the demo's dashboard stays up until a
// line is read (Enter) or the context ends (Ctrl-C).
func TestHoldDashboard(t *testing.T) {
	r, w := io.Pipe()
	var out strings.Builder
	done := make(chan struct{})
	go func() {
		holdDashboard(context.Background(), r, &out, "http://127.0.0.1:1")
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("returned before Enter")
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := w.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	<-done
	if !strings.Contains(out.String(), "stays up at http://127.0.0.1:1/ until you press Enter") {
		t.Errorf("printed %q", out.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	r2, _ := io.Pipe()
	cancel()
	holdDashboard(ctx, r2, io.Discard, "http://127.0.0.1:1") // returns: the context ended
}
