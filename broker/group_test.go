package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"lakehouse/broker"
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
