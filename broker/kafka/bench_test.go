package kafka_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"lakehouse/broker"
	"lakehouse/broker/kafka"
)

// BenchmarkAppendRead appends b.N transactions of 500 records of ~1 KiB
// to an in-process kfake cluster (one broker, one partition), then reads
// them all back the way a streaming reader does (Read from the next
// offset, 10,000 at most per call). It reports both rates.
//
//	go test ./broker/kafka -run '^$' -bench AppendRead -benchtime 200x
func BenchmarkAppendRead(b *testing.B) {
	const perBatch, size = 500, 1000
	c := newCluster(b, kfake.NumBrokers(1))
	l := open(b, c, kafka.Config{})
	ctx := ctxT(b)
	if err := l.CreateTopic(ctx, "t", 1); err != nil {
		b.Fatal(err)
	}
	pad := bytes.Repeat([]byte("x"), size)
	recs := make([]broker.Record, perBatch)
	b.SetBytes(perBatch * size)
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; n++ {
		for i := range recs {
			v := append([]byte(fmt.Sprintf("%d/%d ", n, i)), pad[:size-16]...)
			recs[i] = broker.Record{Topic: "t", Partition: 0, Key: []byte("k"), Value: v}
		}
		if _, err := l.Append(ctx, broker.Batch{Records: recs, Meta: []broker.Meta{{Key: "pos", Value: []byte(fmt.Sprint(n))}}}); err != nil {
			b.Fatal(err)
		}
	}
	appendTime := time.Since(start)

	readStart := time.Now()
	var read int
	for from := int64(0); ; {
		msgs, err := l.Read(ctx, "t", 0, from, 10_000)
		if err != nil {
			b.Fatal(err)
		}
		if len(msgs) == 0 {
			break
		}
		read += len(msgs)
		from = msgs[len(msgs)-1].Offset + 1
	}
	readTime := time.Since(readStart)
	b.StopTimer()
	if read != b.N*perBatch {
		b.Fatalf("read %d records, want %d", read, b.N*perBatch)
	}
	total := float64(b.N * perBatch)
	b.ReportMetric(total/appendTime.Seconds(), "append-rec/s")
	b.ReportMetric(total/readTime.Seconds(), "read-rec/s")
	b.ReportMetric(float64(appendTime.Microseconds())/float64(b.N), "µs/append")
}
