package silvertest

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/table"
)

// BronzeEdits is n bronze rows of partition 0, offsets 0..n-1, each an
// edit event received and appended at noon UTC on 2026-12-01; the caller
// releases it.
func BronzeEdits(n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer b.Release()
	ts := arrow.Timestamp(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixMicro())
	for o := range n {
		b.Field(0).(*array.Int32Builder).Append(0)
		b.Field(1).(*array.Int64Builder).Append(o)
		b.Field(2).(*array.TimestampBuilder).Append(ts)
		b.Field(3).AppendNull()
		b.Field(4).(*array.StringBuilder).Append(`{"type":"edit"}`)
		b.Field(5).(*array.TimestampBuilder).Append(ts)
	}
	return b.NewRecordBatch()
}
