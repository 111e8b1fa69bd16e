package table_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/internal/crashtest"
	"lakehouse/internal/fault"
	"lakehouse/table"
)

// envSoak, set, runs TestCrashSoak, the random-kill soak.
const envSoak = "LAKEHOUSE_TABLE_SOAK"

// TestMain runs a crash child's role instead of the tests in the children
// of TestCrashAtHooks ("hook") and TestCrashSoak ("soak").
func TestMain(m *testing.M) {
	os.Exit(crashtest.Main(m, map[string]crashtest.Role{"hook": hookChild, "soak": soakChild}))
}

const rowsPerBatch = 100

func crashConfig(dir, endpoint string) table.Config {
	cfg := table.Config{Dir: dir, MinOrphanAge: time.Millisecond}
	if endpoint != "" {
		cfg.Warehouse = "s3://lake/warehouse"
		cfg.S3 = table.S3Config{Endpoint: endpoint, Region: "us-east-1", AccessKeyID: "test", SecretAccessKey: "test"}
	}
	return cfg
}

func batchN(id int64) table.Batch {
	return batchOf("bronze", id, bronzeRecord(0, (id-1)*rowsPerBatch, rowsPerBatch))
}

// openChildLake opens the lake of a child's settings dir and s3.
func openChildLake(ctx context.Context, s crashtest.Spec) (*table.Lake, error) {
	l, err := table.Open(ctx, crashConfig(s.Get("dir"), s.Get("s3")))
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	if err := l.EnsureTables(ctx); err != nil {
		return nil, fmt.Errorf("ensure: %w", err)
	}
	return l, nil
}

// hookChild commits batch 1, arms the hook, then commits batch 2 and must
// be killed on the way.
func hookChild(s crashtest.Spec) error {
	ctx := context.Background()
	l, err := openChildLake(ctx, s)
	if err != nil {
		return err
	}
	if _, err := l.CommitBatch(ctx, table.Bronze, batchN(1)); err != nil {
		return fmt.Errorf("commit 1: %w", err)
	}
	s.Arm()
	if _, err := l.CommitBatch(ctx, table.Bronze, batchN(2)); err != nil {
		return fmt.Errorf("commit 2: %w", err)
	}
	return fmt.Errorf("hook %s did not fire", s.Get("hook"))
}

// soakChild commits the batch after the marker's, forever.
func soakChild(s crashtest.Spec) error {
	ctx := context.Background()
	l, err := openChildLake(ctx, s)
	if err != nil {
		return err
	}
	for {
		m, _, err := l.LastCommitted(ctx, table.Bronze, "bronze")
		if err != nil {
			return fmt.Errorf("marker: %w", err)
		}
		if _, err := l.CommitBatch(ctx, table.Bronze, batchN(m.Batch+1)); err != nil {
			return fmt.Errorf("commit %d: %w", m.Batch+1, err)
		}
	}
}

// runChild runs this test binary as a crash child in role with settings
// and returns its output and whether it died from SIGKILL. killAfter > 0
// kills it from outside.
func runChild(t *testing.T, role string, settings []string, killAfter time.Duration) (string, bool) {
	t.Helper()
	c := crashtest.Start(t, role, settings...)
	if killAfter > 0 {
		c.KillAfter(killAfter)
	}
	err := c.Wait(t, 5*time.Minute)
	return c.Output(), crashtest.WasKilled(err)
}

// TestCrashAtHooks kills a child at each table fault hook while it commits
// batch 2, then restarts: the table must be readable and consistent, and
// re-running batch 2 must be made (killed before the commit) or skipped
// (killed after it), never duplicated.
func TestCrashAtHooks(t *testing.T) {
	cases := []struct {
		hook         string
		wantMarker   int64 // batch committed when the child died
		wantRecommit bool  // whether re-running batch 2 commits
	}{
		{"table.after-data-files", 1, true},
		{"table.after-commit", 2, false},
	}
	for _, be := range []string{"local", "s3"} {
		for _, c := range cases {
			t.Run(be+"/"+c.hook, func(t *testing.T) {
				dir := t.TempDir()
				endpoint := ""
				if be == "s3" {
					endpoint = fakeS3(t, "lake") // served by the parent: it survives the child
				}
				out, killed := runChild(t, "hook", []string{"hook", c.hook, "dir", dir, "s3", endpoint}, 0)
				if !strings.Contains(out, fault.Marker(c.hook)) || !killed {
					t.Fatalf("inconclusive: child not killed at %s (killed=%v):\n%s", c.hook, killed, out)
				}
				ctx := context.Background()
				l := openLake(t, crashConfig(dir, endpoint))
				m, ok, err := l.LastCommitted(ctx, table.Bronze, "bronze")
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					t.Fatalf("inconclusive: no batch committed before the kill")
				}
				if m.Batch != c.wantMarker {
					t.Fatalf("marker after kill at %s: got batch %d, want %d", c.hook, m.Batch, c.wantMarker)
				}
				rows, seen := scanOffsets(t, l, table.Bronze)
				if rows != c.wantMarker*rowsPerBatch || int64(len(seen)) != rows {
					t.Fatalf("rows after kill: got %d (%d distinct), want %d", rows, len(seen), c.wantMarker*rowsPerBatch)
				}
				if be == "local" && c.hook == "table.after-data-files" {
					files, err := l.DataFiles(ctx, table.Bronze)
					if err != nil {
						t.Fatal(err)
					}
					if got := countParquet(t, filepath.Join(dir, "warehouse")); got <= len(files.Paths) {
						t.Fatalf("inconclusive: no orphaned data files on disk (got %d, %d referenced): the kill landed before the write", got, len(files.Paths))
					}
				}

				// Restart: the stream re-runs batch 2 with the same id and range.
				res := mustCommit(t, l, table.Bronze, batchN(2))
				if res.Committed != c.wantRecommit {
					t.Fatalf("re-run of batch 2: got committed=%v, want %v", res.Committed, c.wantRecommit)
				}
				mustCommit(t, l, table.Bronze, batchN(3))
				rows, seen = scanOffsets(t, l, table.Bronze)
				if rows != 3*rowsPerBatch || len(seen) != 3*rowsPerBatch {
					t.Fatalf("rows after restart: got %d (%d distinct), want %d", rows, len(seen), 3*rowsPerBatch)
				}
				if _, err := l.DeleteOrphanFiles(ctx, table.Bronze, time.Millisecond); err != nil {
					t.Fatalf("delete orphans after crash: %v", err)
				}
				if be == "local" {
					files, err := l.DataFiles(ctx, table.Bronze)
					if err != nil {
						t.Fatal(err)
					}
					if got, want := countParquet(t, filepath.Join(dir, "warehouse")), len(files.Paths); got != want {
						t.Fatalf("parquet files after orphan cleanup: got %d, want %d", got, want)
					}
				}
				// A fresh handle (no parsed-metadata cache) must still load
				// everything: cleanup may not remove live metadata.
				fresh := openLake(t, crashConfig(dir, endpoint))
				if rows, _ := scanOffsets(t, fresh, table.Bronze); rows != 3*rowsPerBatch {
					t.Fatalf("rows after orphan cleanup: got %d, want %d", rows, 3*rowsPerBatch)
				}
				if m, _, err := fresh.LastCommitted(ctx, table.Bronze, "bronze"); err != nil || m.Batch != 3 {
					t.Fatalf("marker after orphan cleanup: got %+v %v, want batch 3", m, err)
				}
			})
		}
	}
}

// TestCrashSoak SIGKILLs a committing child at random moments, many times,
// and checks after each restart that every committed offset is present
// exactly once. Set LAKEHOUSE_TABLE_SOAK=1 to run it.
func TestCrashSoak(t *testing.T) {
	if os.Getenv(envSoak) == "" || testing.Short() {
		t.Skip("set " + envSoak + "=1 to run the random-kill soak")
	}
	dir := t.TempDir()
	var last int64
	for round := range 20 {
		delay := time.Duration(200+rand.IntN(800)) * time.Millisecond
		out, killed := runChild(t, "soak", []string{"dir", dir}, delay)
		if !killed {
			t.Fatalf("round %d: child exited on its own:\n%s", round, out)
		}
		l, err := table.Open(context.Background(), crashConfig(dir, ""))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.EnsureTables(context.Background()); err != nil {
			t.Fatalf("round %d: ensure tables after kill: %v", round, err)
		}
		m, _, err := l.LastCommitted(context.Background(), table.Bronze, "bronze")
		if err != nil {
			t.Fatal(err)
		}
		rows, seen := scanOffsets(t, l, table.Bronze)
		if rows != m.Batch*rowsPerBatch || int64(len(seen)) != rows {
			t.Fatalf("round %d: marker batch %d, got %d rows (%d distinct), want %d", round, m.Batch, rows, len(seen), m.Batch*rowsPerBatch)
		}
		if m.Batch < last {
			t.Fatalf("round %d: marker went back from %d to %d", round, last, m.Batch)
		}
		last = m.Batch
		_ = l.Close()
		t.Logf("round %d: killed after %s at batch %d", round, delay, m.Batch)
	}
	if last == 0 {
		t.Fatal("inconclusive: no batch ever committed")
	}
}
