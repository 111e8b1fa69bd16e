package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"lakehouse/internal/launch"
	"lakehouse/internal/observe"
	"lakehouse/internal/progress"
)

func startRun(ctx context.Context, cfg ProveConfig, args, env []string, run int) (*launch.Child, error) {
	return launchLog(ctx, cfg, args, env, fmt.Sprintf("prove-run-%d.log", run+1))
}

// launchLog starts the appliance with its output in DataDir/name.
func launchLog(ctx context.Context, cfg ProveConfig, args, env []string, name string) (*launch.Child, error) {
	cmd := cfg.Launch(args)
	cmd.Env = append(append(append(os.Environ(), cfg.env...), env...), cmd.Env...)
	return launch.Start(ctx, cmd, filepath.Join(cfg.DataDir, name), 2*time.Minute)
}

// killAt waits for the child to SIGKILL itself at target committed bronze
// offsets (KillAtBronzeEnv; target 0: the parent kills it at once, before
// any commit). bar shows the events committed, from the status.
func killAt(ctx context.Context, c *launch.Child, target int64, timeout time.Duration, bar *progress.Reporter) error {
	if target == 0 {
		c.Kill()
		return nil
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if done, err := c.Exited(); done {
			if !c.KilledBySignal() || !c.SawFault(KillAtBronzeHook) {
				return fmt.Errorf("appliance exited before the kill (%v); see %s", err, c.LogPath())
			}
			return nil
		}
		if st, err := observe.FetchStatus(ctx, c.Base, "bronze"); err == nil {
			if q, ok := st.Queries["bronze"]; ok && q.Batch >= 0 {
				bar.Set(st.Topics[DefaultTopic] - q.Lag)
			}
		}
		select {
		case <-ctx.Done():
			c.Kill()
			return ctx.Err()
		case <-c.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	c.Kill()
	return fmt.Errorf("bronze did not reach %d events within %s; see %s", target, timeout, c.LogPath())
}

func waitExit(ctx context.Context, c *launch.Child, timeout time.Duration) error {
	select {
	case <-c.Done():
		return nil
	case <-time.After(timeout):
		c.Kill()
		return fmt.Errorf("%w: the armed fault hook did not kill the appliance within %s", ErrInconclusive, timeout)
	case <-ctx.Done():
		c.Kill()
		return ctx.Err()
	}
}

// waitDrained polls until the broker holds want messages and every
// streaming query has no lag, twice in a row. bar shows every query's lag
// and the broker's count.
func waitDrained(ctx context.Context, c *launch.Child, want int64, timeout time.Duration, bar *progress.Reporter) error {
	deadline := time.Now().Add(timeout)
	stable := 0
	for time.Now().Before(deadline) {
		if done, err := c.Exited(); done {
			return fmt.Errorf("appliance exited while draining (%v); see %s", err, c.LogPath())
		}
		st, err := observe.FetchStatus(ctx, c.Base)
		if err == nil {
			bar.SetNote(st.DrainNote(DefaultTopic, want))
			if st.Drained(DefaultTopic, want) {
				stable++
				if stable >= 2 {
					return nil
				}
			} else {
				stable = 0
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("pipeline did not drain within %s; see %s", timeout, c.LogPath())
}
