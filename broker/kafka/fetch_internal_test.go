package kafka

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchKeepsAbortedList: a fetch of the Log cut by the partition limit
// in a backlog of aborted and committed transactions carries the list of
// the aborted ones it holds, where the same fetch with the request limit
// equal to the partition limit (the Log's setting before) gets none from
// kfake. Inconclusive if kfake keeps the list then too (the Log's
// requestBytes is then a workaround that can go).
func TestFetchKeepsAbortedList(t *testing.T) {
	l, ctx := testLog(t)
	for i := 0; i < 60; i++ {
		appendTxn(t, ctx, l, fmt.Sprintf("s%d", i), 8, 32<<10, i%2 == 1)
	}
	tm, err := l.topic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	listed := func(reqBytes int32) (listed, markers int, cut bool) {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.IsolationLevel, req.SessionEpoch = -1, reqBytes, readCommitted, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = tm.name, tm.id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = FetchBytes
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, l.cl)
		if err != nil {
			t.Fatal(err)
		}
		part := &resp.Topics[0].Partitions[0]
		recs, next, err := decode("t", 0, 0, part)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if markerOf(r) == aborted {
				markers++
			}
		}
		return len(part.AbortedTransactions), markers, next < part.LastStableOffset
	}
	before, markers, cut := listed(FetchBytes)
	if !cut || markers == 0 {
		t.Fatalf("inconclusive: the fetch was not cut (%v) or held no abort marker (%d)", cut, markers)
	}
	if before != 0 {
		t.Fatalf("inconclusive: kfake lists %d aborted transactions in a response cut at the request limit: it no longer drops the list, requestBytes' workaround can go", before)
	}
	if now, markers, cut := listed(l.requestBytes()); !cut || now < markers {
		t.Fatalf("with the Log's request limit: %d aborted transactions listed for %d abort markers (cut %v)", now, markers, cut)
	}
	t.Logf("a response cut at 4 MiB holding %d abort markers: 0 listed with the request limit at 4 MiB, all with %d bytes", markers, l.requestBytes())
}
