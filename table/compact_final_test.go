package table_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/table"
)

// TestClosedDayMergedTighter: the files a closed day's merge writes are
// final, and are written at a higher zstd level than the streaming writes
// and the tiers' merges: the same rows of real events, merged once as a
// closed day and once as a tier, take fewer bytes the first way.
func TestClosedDayMergedTighter(t *testing.T) {
	ctx := context.Background()
	events := sampleEvents(t)
	merged := func(pol table.CompactPolicy) int64 {
		l := openLake(t, table.Config{Dir: t.TempDir()})
		for id := int64(1); id <= 8; id++ {
			mustCommit(t, l, table.Bronze, batchOf("bronze", id, realBronzeRecord(events, (id-1)*400, 400)))
		}
		before, err := l.Stats(ctx, table.Bronze)
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.Compact(ctx, table.Bronze, pol)
		if err != nil {
			t.Fatal(err)
		}
		if res.FilesRemoved != 8 || res.FilesAdded != 1 || before.Records != 3200 {
			t.Fatalf("inconclusive: compact %+v over %+v, want the one day's 8 files merged into one", res, before)
		}
		return res.BytesAfter
	}
	// A day that ended long ago: merged as cold, final.
	final := merged(table.CompactPolicy{TargetBytes: 64 << 20, FanIn: 64, ColdAfter: time.Hour, Now: realBase.Add(72 * time.Hour)})
	// The same files as a tier of eight: merged at the tables' level.
	tier := merged(table.CompactPolicy{TargetBytes: 64 << 20, FanIn: 8})
	t.Logf("3,200 real events merged: %d bytes as a closed day, %d as a tier (%.1f %% fewer)", final, tier, 100*(1-float64(final)/float64(tier)))
	if final >= tier*98/100 {
		t.Errorf("a closed day's merge wrote %d bytes, a tier's %d: want at least 2 %% fewer", final, tier)
	}
}

// realBase is a midday, so that every row of realBronzeRecord falls in one
// day partition.
var realBase = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// realBronzeRecord builds n bronze rows at offsets off.. of partition 0,
// whose values are the recorded events with a distinct id each, a second
// apart from realBase.
func realBronzeRecord(events []string, off int64, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer b.Release()
	for i := range n {
		o := off + int64(i)
		ts := arrow.Timestamp(realBase.Add(time.Duration(o) * time.Second).UnixMicro())
		ev := events[o%int64(len(events))]
		ev = strings.Replace(ev, `"id": "`, fmt.Sprintf(`"id": "%08x`, o*2654435761%(1<<32)), 1)
		b.Field(0).(*array.Int32Builder).Append(0)
		b.Field(1).(*array.Int64Builder).Append(o)
		b.Field(2).(*array.TimestampBuilder).Append(ts)
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("k%d", o))
		b.Field(4).(*array.StringBuilder).Append(ev)
		b.Field(5).(*array.TimestampBuilder).Append(ts)
	}
	return b.NewRecordBatch()
}
