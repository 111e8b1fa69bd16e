package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lakehouse/broker"
)

// BenchmarkAppend measures durable appends of 1 KB records: every Append
// returns only after its group commit is fsync'd.
//
//	go test -bench Append -run '^$' ./broker
func BenchmarkAppend(b *testing.B) {
	for _, tc := range []struct{ appenders, batch int }{
		{1, 1}, {8, 1}, {8, 100}, {1, 1000},
	} {
		b.Run(fmt.Sprintf("appenders=%d/batch=%d", tc.appenders, tc.batch), func(b *testing.B) {
			benchAppend(b, tc.appenders, tc.batch)
		})
	}
}

func benchAppend(b *testing.B, appenders, batch int) {
	ctx := context.Background()
	db, err := broker.Open(filepath.Join(b.TempDir(), "broker.db"), broker.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateTopic(ctx, "t", 4); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 1024)
	// b.N counts records; each appender takes batches until N is used up.
	var left atomic.Int64
	left.Store(int64(b.N))
	var lat atomic.Int64
	var calls atomic.Int64
	b.SetBytes(1024)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for a := 0; a < appenders; a++ {
		wg.Add(1)
		go func(a int) {
			defer wg.Done()
			recs := make([]broker.Record, batch)
			for i := range recs {
				recs[i] = broker.Record{Topic: "t", Partition: a % 4, Value: value, Timestamp: time.Now()}
			}
			for left.Add(-int64(batch)) > -int64(batch) {
				t0 := time.Now()
				if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
					b.Error(err)
					return
				}
				lat.Add(int64(time.Since(t0)))
				calls.Add(1)
			}
		}(a)
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	offs, _ := db.Offsets(ctx, "t")
	var total int64
	for _, o := range offs {
		total += o.End
	}
	b.ReportMetric(float64(total)/el.Seconds(), "records/s")
	if c := calls.Load(); c > 0 {
		b.ReportMetric(float64(lat.Load())/float64(c)/1e6, "ms/append")
	}
}
