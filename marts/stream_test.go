package marts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lakehouse/table"
)

// streamBatch returns silver rows of one simulated stream batch: n edits
// with ids unique to the batch.
func streamBatch(batch int64, n int) []row {
	rows := make([]row, n)
	for i := range rows {
		at := t0.Add(time.Duration(batch)*time.Minute + time.Duration(i)*time.Second)
		rows[i] = edit(fmt.Sprintf("b%04d-%02d", batch, i), at, "enwiki", "edit", fmt.Sprintf("Page %d", i%4),
			fmt.Sprintf("User%d", i%3), i%5 == 0, int64(i*10-20))
	}
	return rows
}

// TestSchedulerWhileStreaming runs the scheduler with short intervals while a
// simulated silver stream commits batches: every stream commit succeeds,
// compaction and expiry run between batches, a failing expiry (its Protect
// hook errs twice) is recorded and runs again, the protected snapshot
// survives expiry, and afterwards silver has no duplicates and its marker is
// intact.
func TestSchedulerWhileStreaming(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lake := openTestLake(t, t.TempDir())
	var protected atomic.Int64
	var protectCalls atomic.Int32
	var mu sync.Mutex
	var runs []Run
	m := New(lake, fakeLog{}, Config{
		Logger:       slog.New(slog.DiscardHandler),
		RefreshEvery: 300 * time.Millisecond, MaintainEvery: 200 * time.Millisecond, CompactEvery: 200 * time.Millisecond,
		RetryEvery: 50 * time.Millisecond, KeepSnapshots: 2, MaxSnapshots: 3,
		Compact: table.CompactPolicy{TargetBytes: 128 << 20, FanIn: 2},
		Protect: func(ctx context.Context, ident string) (int64, error) {
			if ident != table.SilverEdits {
				return 0, nil
			}
			if protectCalls.Add(1) <= 2 {
				return 0, errors.New("checkpoint unreadable (injected)")
			}
			return protected.Load(), nil
		},
		OnRun: func(r Run) { mu.Lock(); runs = append(runs, r); mu.Unlock() },
	})
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	const batches, perBatch = 24, 8
	var protectedBatch int64 = 10
	for b := int64(0); b < batches; b++ {
		res := commit(t, lake, table.SilverEdits, "silver", b, table.SilverEditsSchema, streamBatch(b, perBatch))
		if !res.Committed {
			t.Fatalf("batch %d: not committed", b)
		}
		if b == protectedBatch {
			protected.Store(res.SnapshotID)
		}
		time.Sleep(25 * time.Millisecond)
	}
	// Let the scheduler finish at least one more round of each job.
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		seen := map[string]int{}
		for _, r := range runs {
			seen[r.Job+"/"+r.Status]++
		}
		mu.Unlock()
		if seen["expire/failed"] >= 2 && seen["expire/ok"] >= 2 && seen["compact/ok"] >= 2 && seen["refresh/ok"] >= 2 {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			for _, r := range runs {
				if r.Status == StatusFailed {
					t.Logf("%s: %s", r.Job, r.Err)
				}
			}
			mu.Unlock()
			t.Fatalf("scheduler did not run every job: %v", seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}

	ctx = context.Background()
	// A failed expiry was followed by a retry well before its interval.
	mu.Lock()
	var failedAt time.Time
	var retried bool
	var compacted bool
	for _, r := range runs {
		if r.Job == JobExpire && r.Status == StatusFailed && failedAt.IsZero() {
			failedAt = r.Started.Add(r.Duration)
		}
		if r.Job == JobExpire && !failedAt.IsZero() && r.Started.After(failedAt) {
			retried = true // how soon: TestFailedMaintenanceRetriedBeforeItsInterval
		}
		if r.Job == JobCompact && r.Status == StatusOK && r.Detail != "" {
			compacted = true
		}
	}
	mu.Unlock()
	if !retried {
		t.Errorf("failed expiry was not retried")
	}
	if !compacted {
		t.Errorf("no compaction did anything")
	}
	// The protected snapshot (and so the stream's starting point) survived.
	after, err := lake.AppendsAfter(ctx, table.SilverEdits, protected.Load())
	if err != nil {
		t.Fatalf("appends after protected snapshot: %v", err)
	}
	if got, want := len(after), batches-1-int(protectedBatch); got != want {
		t.Errorf("appends after protected batch %d: got %d, want %d", protectedBatch, got, want)
	}
	mk, ok, err := lake.LastCommitted(ctx, table.SilverEdits, "silver")
	if err != nil || !ok || mk.Batch != batches-1 {
		t.Fatalf("silver marker: got %+v %v %v, want batch %d", mk, ok, err, batches-1)
	}
	assertSilver(t, lake, batches*perBatch)
}

// assertSilver checks silver holds exactly want rows, each event id once.
func assertSilver(t *testing.T, lake *table.Lake, want int) {
	t.Helper()
	m := New(lake, fakeLog{}, Config{Logger: slog.New(slog.DiscardHandler)})
	d, err := openDuck(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Every file counts as not checked before.
	f, err := lake.DataFiles(context.Background(), table.SilverEdits)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.attach(context.Background(), table.SilverEdits+"_new", f); err != nil {
		t.Fatal(err)
	}
	if err := d.attach(context.Background(), table.SilverEdits+"_old", table.Files{Schema: f.Schema}); err != nil {
		t.Fatal(err)
	}
	c, err := m.checkSilverUnique(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Passed || c.Numbers["rows"] != int64(want) {
		t.Errorf("silver: got %v, want %d unique rows", c, want)
	}
}

// TestFailedMaintenanceRetriedBeforeItsInterval: a maintenance pass that
// failed runs again after RetryEvery, not after its (here hour-long)
// interval. Protect errs on its first two calls, so the first pass and its
// first retry fail and the second retry succeeds: three expiry runs within
// seconds can only come from retries.
func TestFailedMaintenanceRetriedBeforeItsInterval(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lake := openTestLake(t, t.TempDir())
	for b := int64(0); b < 5; b++ { // over MaxSnapshots: every pass has an expiry to do
		commit(t, lake, table.SilverEdits, "silver", b, table.SilverEditsSchema, streamBatch(b, 2))
	}
	var calls atomic.Int32
	var mu sync.Mutex
	var runs []Run
	m := New(lake, fakeLog{}, Config{
		Logger:       slog.New(slog.DiscardHandler),
		RefreshEvery: -1, CompactEvery: -1, MaintainEvery: time.Hour, RetryEvery: 20 * time.Millisecond,
		KeepSnapshots: 2, MaxSnapshots: 3,
		Protect: func(ctx context.Context, ident string) (int64, error) {
			if ident == table.SilverEdits && calls.Add(1) <= 2 {
				return 0, errors.New("checkpoint unreadable (injected)")
			}
			return 0, nil
		},
		OnRun: func(r Run) {
			if r.Job == JobExpire {
				mu.Lock()
				runs = append(runs, r)
				mu.Unlock()
			}
		},
	})
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(runs)
		mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("expiry ran %d times in 30 s with an hour-long interval, want a failed pass, a failed retry and a passing retry", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	got := []string{runs[0].Status, runs[1].Status, runs[2].Status}
	if want := []string{StatusFailed, StatusFailed, StatusOK}; !slices.Equal(got, want) {
		t.Fatalf("expiry runs: got %v, want %v", got, want)
	}
}
