package stream

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"lakehouse/broker"
)

// pacedSource is a broker source that reports its empty plans, and whose
// Wait can be made to return at once without input (a source that wakes
// spuriously).
type pacedSource struct {
	*BrokerSource
	spurious bool
	empty    atomic.Int64
	emptied  chan struct{} // gets a value at each empty plan (never blocks)
}

func (s *pacedSource) Plan(ctx context.Context, start Offset, limit Limit) (Offset, int64, error) {
	end, n, err := s.BrokerSource.Plan(ctx, start, limit)
	if err == nil && n == 0 {
		s.empty.Add(1)
		select {
		case s.emptied <- struct{}{}:
		default:
		}
	}
	return end, n, err
}

func (s *pacedSource) Wait(ctx context.Context, start Offset) error {
	if s.spurious {
		return ctx.Err()
	}
	return s.BrokerSource.Wait(ctx, start)
}

func runPaced(t *testing.T, trigger time.Duration, spurious bool) (*Query, *pacedSource, *broker.DB, *memSink) {
	t.Helper()
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 1)
	t.Cleanup(func() { db.Close() })
	fill(t, db, 10, 10)
	src := &pacedSource{BrokerSource: NewBrokerSource(db, testTopic, testSchema), spurious: spurious,
		emptied: make(chan struct{}, 1)}
	sink := newMemSink()
	q, err := New(Config{Name: "bronze", CheckpointDir: filepath.Join(dir, "cp"), Trigger: trigger,
		Logger: slog.New(slog.DiscardHandler)}, src, nil, sink, &memProgress{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	})
	waitRuns(t, q, 1)
	return q, src, db, sink
}

func waitRuns(t *testing.T, q *Query, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, runs := q.Last(); runs < want; _, runs = q.Last() {
		if time.Now().After(deadline) {
			t.Fatalf("%d batches ran in 30 s, want %d", runs, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunInputAfterAnIdleTriggerStartsAtOnce: input that lands while a
// query waits for input, a trigger or more after its last batch began,
// starts a batch at once; the empty plan before it does not start another
// trigger interval. This is what lets ingest hold events for a trigger
// without delaying bronze (pipelineFlags.ingestConfig).
func TestRunInputAfterAnIdleTriggerStartsAtOnce(t *testing.T) {
	const trigger = 3 * time.Second
	q, src, db, sink := runPaced(t, trigger, false)
	select {
	case <-src.emptied: // a trigger after batch 1: nothing new, the query waits
	case <-time.After(30 * time.Second):
		t.Fatal("no empty plan within 30 s of the first batch")
	}
	landed := time.Now()
	fill(t, db, 10, 10)
	waitRuns(t, q, 2)
	if d := time.Since(landed); d > trigger/2 {
		t.Errorf("input that landed after an empty plan started a batch %v later, want at once (trigger %v)", d, trigger)
	}
	if got := len(sink.pairs("bronze")); got != 20 {
		t.Errorf("landed %d, want 20", got)
	}
}

// TestRunSpuriousWakeIsPacedByTheTrigger: a source whose Wait returns with
// no input is planned at most about once per trigger, not in a loop.
func TestRunSpuriousWakeIsPacedByTheTrigger(t *testing.T) {
	const trigger = 300 * time.Millisecond
	_, src, _, _ := runPaced(t, trigger, true)
	before := src.empty.Load()
	time.Sleep(6 * trigger)
	if n := src.empty.Load() - before; n > 9 || n < 2 {
		t.Errorf("%d empty plans in six triggers with a Wait that returns at once, want about six", n)
	}
}
