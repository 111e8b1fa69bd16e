package marts

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/internal/fault"
	"lakehouse/table"
)

// Environment of the crash child (set only by TestMaintenanceKillRestart).
const (
	envCrashDir  = "MARTS_CRASH_CHILD_DIR"
	envCrashSkip = "MARTS_CRASH_SKIP"
)

const crashPerBatch = 6

// streamWithMaintenance commits silver batches from the marker on, running
// compaction and expiry every third batch, like a stream with the scheduler
// beside it. It prints "committed N" after each commit returns and
// "compacted" after each compaction job.
func streamWithMaintenance(ctx context.Context, lake *table.Lake, batches int64, out *os.File) error {
	m := New(lake, nil, Config{Logger: slog.New(slog.DiscardHandler), KeepSnapshots: 2, MaxSnapshots: 3,
		Compact: table.CompactPolicy{TargetBytes: 128 << 20, FanIn: 2},
		Protect: func(context.Context, string) (int64, error) { return 0, nil }})
	start := int64(0)
	if mk, ok, err := lake.LastCommitted(ctx, table.SilverEdits, "silver"); err != nil {
		return err
	} else if ok {
		start = mk.Batch // replay the last batch: it must be skipped
	}
	for b := start; b < start+batches; b++ {
		rec := recordOf(nopTB{}, table.SilverEditsSchema, streamBatch(b, crashPerBatch))
		res, err := lake.CommitBatch(ctx, table.SilverEdits, table.Batch{Query: "silver", ID: b, Offsets: strconv.FormatInt(b, 10), Records: []arrow.RecordBatch{rec}})
		rec.Release()
		if err != nil {
			return fmt.Errorf("commit %d: %w", b, err)
		}
		fmt.Fprintf(out, "committed %d %v\n", b, res.Committed)
		if b%3 == 2 {
			if _, err := m.RunJob(ctx, JobCompact); err != nil {
				return err
			}
			fmt.Fprintln(out, "compacted")
			if _, err := m.RunJob(ctx, JobExpire); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestMaintenanceKillRestart: a child commits silver batches with
// compaction and expiry between them and is SIGKILLed by the
// marts.after-compact hook in the middle of its second compaction job. After
// the crash, silver has every committed batch exactly once and the marker
// names the last one; a restart replays the last batch (skipped by the
// marker), continues with maintenance, and still has no duplicates.
func TestMaintenanceKillRestart(t *testing.T) {
	if dir := os.Getenv(envCrashDir); dir != "" {
		skip, _ := strconv.Atoi(os.Getenv(envCrashSkip))
		fault.Arm(hookAfterCompact, skip)
		lake, err := table.Open(context.Background(), table.Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := streamWithMaintenance(context.Background(), lake, 30, os.Stdout); err != nil {
			t.Fatal(err)
		}
		t.Fatal("child finished without being killed")
	}
	dir := t.TempDir()
	ctx := context.Background()
	lake := openTestLake(t, dir)
	_ = lake.Close()

	// Compaction jobs: the 1st compacts silver (and ops.runs from the 2nd
	// job on); skip=2 fires the hook inside the second or third job, after
	// real compactions committed.
	cmd := exec.Command(os.Args[0], "-test.run=^TestMaintenanceKillRestart$", "-test.v")
	cmd.Env = append(os.Environ(), envCrashDir+"="+dir, envCrashSkip+"=2")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: got %v, want death by SIGKILL\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), fault.Marker(hookAfterCompact)) {
		t.Fatalf("inconclusive: hook %s did not fire\nstderr:\n%s", hookAfterCompact, stderr.String())
	}
	last, compactions := int64(-1), 0
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "committed":
			n, _ := strconv.ParseInt(f[1], 10, 64)
			last = n
		case len(f) == 1 && f[0] == "compacted":
			compactions++
		}
	}
	if last < 3 || compactions < 1 {
		t.Fatalf("inconclusive: the kill came before anything was committed and compacted (last batch %d, compaction jobs %d)", last, compactions)
	}

	lake = openTestLake(t, dir)
	mk, ok, err := lake.LastCommitted(ctx, table.SilverEdits, "silver")
	if err != nil || !ok || mk.Batch != last {
		t.Fatalf("silver marker after the kill: got %+v %v %v, want batch %d", mk, ok, err, last)
	}
	assertSilver(t, lake, int(last+1)*crashPerBatch)

	// Restart: replay the last batch, then 6 more with maintenance.
	if err := streamWithMaintenance(ctx, lake, 7, devNull(t)); err != nil {
		t.Fatalf("restart: %v", err)
	}
	mk, ok, err = lake.LastCommitted(ctx, table.SilverEdits, "silver")
	if err != nil || !ok || mk.Batch != last+6 {
		t.Fatalf("silver marker after restart: got %+v %v %v, want batch %d", mk, ok, err, last+6)
	}
	assertSilver(t, lake, int(last+7)*crashPerBatch)
	if _, ok, err := lake.LastCommitted(ctx, OpsRuns, opsQuery); err != nil || !ok {
		t.Errorf("ops.runs marker: %v %v", ok, err)
	}
}

func devNull(t *testing.T) *os.File {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// nopTB lets recordOf run outside a test's goroutine; it panics on failure.
type nopTB struct{ testing.TB }

func (nopTB) Helper()                        {}
func (nopTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
