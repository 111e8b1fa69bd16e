package marts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/internal/crashtest"
	"lakehouse/table"
)

// TestMain runs maintainChild instead of the tests in
// TestMaintenanceKillRestart's child process (crashtest role "maintain"),
// and modelsChild in TestModelRefreshKill's (role "models").
func TestMain(m *testing.M) {
	os.Exit(crashtest.Main(m, map[string]crashtest.Role{"maintain": maintainChild, "models": modelsChild}))
}

// maintainChild is the child's body (settings dir, hook, skip): it streams
// with maintenance until the armed hook kills it.
func maintainChild(s crashtest.Spec) error {
	s.Arm()
	lake, err := table.Open(context.Background(), table.Config{Dir: s.Get("dir")})
	if err != nil {
		return err
	}
	if err := streamWithMaintenance(context.Background(), lake, 30, os.Stdout); err != nil {
		return err
	}
	return errors.New("finished without being killed")
}

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
	dir := t.TempDir()
	ctx := context.Background()
	lake := openTestLake(t, dir)
	_ = lake.Close()

	// Compaction jobs: the 1st compacts silver (and ops.runs from the 2nd
	// job on); skip=2 fires the hook inside the second or third job, after
	// real compactions committed.
	c := crashtest.Start(t, "maintain", "dir", dir, "hook", hookAfterCompact, "skip", "2")
	if err := c.Wait(t, 5*time.Minute); !crashtest.WasKilled(err) {
		t.Fatalf("child: got %v, want death by SIGKILL\noutput:\n%s", err, crashtest.Tail(c.Output(), 40))
	}
	if !c.Fired(hookAfterCompact) {
		t.Fatalf("inconclusive: hook %s did not fire\noutput:\n%s", hookAfterCompact, crashtest.Tail(c.Output(), 40))
	}
	last, compactions := int64(-1), len(c.Lines("compacted"))
	for _, l := range c.Lines("committed ") {
		if f := strings.Fields(l); len(f) == 2 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			last = n
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
