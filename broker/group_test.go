package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/internal/fault"
)

// TestBadBatchFailsOnlyItsCaller: a batch the store would refuse (here an
// empty metadata key) fails only its own Append; the concurrent Appends it
// would have shared a group commit with succeed, and their records are
// there. Before the check, bbolt refused the key inside the group's
// transaction and every caller of that group failed.
func TestBadBatchFailsOnlyItsCaller(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, t.TempDir())
	if err := db.CreateTopic(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	const rounds, callers = 20, 32
	good := 0
	for round := range rounds {
		start := make(chan struct{})
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				key := fmt.Sprintf("pos-%d", i)
				if i == callers/2 {
					key = "" // the bad one, in the middle of the crowd
				}
				<-start
				_, errs[i] = db.Append(ctx, broker.Batch{
					Records: []broker.Record{{Topic: "t", Partition: 0, Value: []byte(fmt.Sprintf("r%d-%d", round, i))}},
					Meta:    []broker.Meta{{Key: key, Value: []byte("x")}},
				})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			switch {
			case i == callers/2 && !errors.Is(err, broker.ErrBadMeta):
				t.Fatalf("round %d: the bad batch: %v, want ErrBadMeta", round, err)
			case i != callers/2 && err != nil:
				t.Fatalf("round %d: good caller %d failed with the bad one: %v", round, i, err)
			case i != callers/2:
				good++
			}
		}
	}
	msgs, err := db.Read(ctx, "t", 0, 0, rounds*callers)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != good {
		t.Errorf("the topic holds %d records, want the %d good ones", len(msgs), good)
	}
}

// TestConcurrentAppendsShareOneCommit: appends that arrive while a group
// commit is in flight are committed together in the next one. The first
// append's commit is held (at the broker.after-commit hook) until the other
// callers are waiting; every hit of the hook is one group commit, and the
// waiting callers must share commits: at most 3 for 32 appends (the held
// one, the crowd, and one for a caller the scheduler started late).
func TestConcurrentAppendsShareOneCommit(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, t.TempDir())
	if err := db.CreateTopic(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	const callers = 32
	var (
		commits atomic.Int64
		first   = make(chan struct{})
		release = make(chan struct{})
	)
	fault.ArmFunc("broker.after-commit", 0, func(string) {
		if commits.Add(1) == 1 {
			close(first)
			<-release
		}
	})
	defer fault.Disarm()
	append1 := func(i int) error {
		_, err := db.Append(ctx, broker.Batch{Records: []broker.Record{{Topic: "t", Partition: 0, Value: []byte(fmt.Sprintf("r%d", i))}}})
		return err
	}
	errs := make(chan error, callers)
	go func() { errs <- append1(0) }()
	<-first // the first group commit is in flight, and held
	for i := 1; i < callers; i++ {
		go func() { errs <- append1(i) }()
	}
	time.Sleep(200 * time.Millisecond) // the crowd reaches the committer's queue
	close(release)
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := db.Read(ctx, "t", 0, 0, callers+1)
	if err != nil || len(msgs) != callers {
		t.Fatalf("read back %d records (%v), want %d", len(msgs), err, callers)
	}
	if got := commits.Load(); got > 3 {
		t.Errorf("%d appends took %d group commits, want them to share (at most 3)", callers, got)
	}
}
