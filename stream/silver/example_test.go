package silver_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/internal/sample"
	"lakehouse/stream"
	"lakehouse/stream/silver"
	"lakehouse/table"
)

// The silver query lands the edit and new events of committed bronze
// snapshots in silver.edits. Here bronze holds the 50 recorded events
// (19 edits, 1 page creation, 30 log and categorize events), committed
// twice as a resend would; silver keeps 20 rows.
func ExampleNewQuery() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "silver-example")
	defer os.RemoveAll(dir)
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		panic(err)
	}
	defer lake.Close()
	if err := lake.EnsureTables(ctx); err != nil {
		panic(err)
	}
	for batch := int64(0); batch < 2; batch++ {
		rec := sampleBronze(batch * 50)
		if _, err := lake.CommitBatch(ctx, table.Bronze, table.Batch{Query: "bronze", ID: batch,
			Offsets: fmt.Sprint(batch), Records: []arrow.RecordBatch{rec}}); err != nil {
			panic(err)
		}
		rec.Release()
	}

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	q, _, err := silver.NewQuery(lake, stream.Config{DataDir: dir, Logger: quiet}, silver.Config{})
	if err != nil {
		panic(err)
	}
	if err := q.Drain(ctx); err != nil { // q.Run(ctx) runs until ctx is done
		panic(err)
	}
	last, batches := q.Last()
	fmt.Printf("batches %d, bronze rows %d, silver rows %d, duplicates %d\n",
		batches, last.RowsIn, last.RowsOut, last.Stats.Duplicates)
	// Output: batches 1, bronze rows 100, silver rows 20, duplicates 20
}

// sampleBronze builds a bronze record of the 50 recorded events at offsets
// from..from+49.
func sampleBronze(from int64) arrow.RecordBatch {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer rb.Release()
	// When the broker received them: after the recording's meta.dt.
	received := arrow.Timestamp(time.Date(2026, 2, 26, 16, 0, 0, 0, time.UTC).UnixMicro())
	for i, e := range sample.Events() {
		off := from + int64(i)
		rb.Field(0).(*array.Int32Builder).Append(0)
		rb.Field(1).(*array.Int64Builder).Append(off)
		rb.Field(2).(*array.TimestampBuilder).Append(received)
		rb.Field(3).(*array.StringBuilder).AppendNull()
		rb.Field(4).(*array.StringBuilder).Append(string(e))
		rb.Field(5).(*array.TimestampBuilder).Append(received)
	}
	return rb.NewRecordBatch()
}
