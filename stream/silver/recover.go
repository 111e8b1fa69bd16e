package silver

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/stream/lakeio"
	"lakehouse/table"
)

// stateFromTable rebuilds dedup state version v from silver.edits when the
// checkpoint lost it (the query continues from the table's marker): the
// watermark is the one the table's last silver batch recorded, the newest
// event time and the live ids come from the rows whose event_time +
// delay has not fallen below it. Duplicates of a row share its event time,
// so the newest silver event time is the newest event time seen, except for
// late rows, which are older than the watermark anyway.
func stateFromTable(ctx context.Context, lake *table.Lake, query string, v int64, delay time.Duration) (*state, error) {
	st := newState(v)
	wm, found, err := lastWatermark(ctx, lake, query)
	if err != nil {
		return nil, err
	}
	if !found {
		return st, nil
	}
	st.watermark = wm
	cols := []string{"event_id", "event_time"}
	add := func(rec arrow.RecordBatch) error { return addRows(st, rec, delay) }
	if st.watermark == noTime {
		err = lake.ScanColumns(ctx, table.SilverEdits, cols, add)
	} else {
		from := time.UnixMicro(st.watermark - delay.Microseconds())
		err = lake.ScanColumnsFrom(ctx, table.SilverEdits, cols, "event_time", from, add)
	}
	if err != nil {
		return nil, fmt.Errorf("rebuild state from %s: %w", table.SilverEdits, err)
	}
	return st, nil
}

// lastWatermark returns the watermark silver's last committed batch used
// (noTime if it had none): from the table marker, which every batch
// updates (empty batches too), or, for a marker written before it kept the
// batch's properties, from the newest silver snapshot's summary. found is
// false when the query never committed.
func lastWatermark(ctx context.Context, lake *table.Lake, query string) (int64, bool, error) {
	m, ok, err := lake.LastCommitted(ctx, table.SilverEdits, query)
	if err != nil {
		return noTime, false, fmt.Errorf("rebuild state from %s: %w", table.SilverEdits, err)
	}
	if !ok {
		return noTime, false, nil
	}
	sum := m.Props
	if sum == nil {
		snaps, err := lake.AppendsAfter(ctx, table.SilverEdits, 0)
		if err != nil {
			return noTime, false, fmt.Errorf("rebuild state from %s: %w", table.SilverEdits, err)
		}
		for i := len(snaps) - 1; i >= 0; i-- {
			if snaps[i].Summary[table.SummaryQuery] == query {
				sum = snaps[i].Summary
				break
			}
		}
	}
	if s, _, ok := lakeio.StatsFromSummary(sum); ok && !s.Watermark.IsZero() {
		return s.Watermark.UnixMicro(), true, nil
	}
	return noTime, true, nil
}

func addRows(st *state, rec arrow.RecordBatch, delay time.Duration) error {
	var ids *array.String
	var times *array.Timestamp
	for i, f := range rec.Schema().Fields() {
		switch f.Name {
		case "event_id":
			ids, _ = rec.Column(i).(*array.String)
		case "event_time":
			times, _ = rec.Column(i).(*array.Timestamp)
		}
	}
	if ids == nil || times == nil {
		return fmt.Errorf("rebuild state from %s: want event_id and event_time, got %s", table.SilverEdits, rec.Schema())
	}
	for i := 0; i < ids.Len(); i++ {
		et := int64(times.Value(i))
		st.maxEvent = max(st.maxEvent, et)
		if secs := toSecs(et); !expired(secs, st.watermark, delay) {
			st.ids[keyOf(ids.Value(i))] = secs
		}
	}
	return nil
}
