package stream

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// progressValue returns the value of the progress column named name, and
// false if Progress has no such field. Durations are milliseconds; the
// column names are the snake_case names of Progress's JSON tags (with
// _ms instead of _ns for durations), plus a few aliases.
func progressValue(p Progress, name string) (any, bool) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	switch name {
	case "query", "query_name":
		return p.Query, true
	case "query_id":
		return p.QueryID, true
	case "batch", "batch_id":
		return p.Batch, true
	case "started", "timestamp", "ts", "batch_ts":
		return p.Started, true
	case "start", "start_offsets":
		return string(p.Start), true
	case "end", "end_offsets":
		return string(p.End), true
	case "rows_in", "input_rows", "num_input_rows":
		return p.RowsIn, true
	case "rows_out", "output_rows":
		return p.RowsOut, true
	case "bytes", "input_bytes":
		return p.Bytes, true
	case "committed":
		return p.Committed, true
	case "replayed":
		return p.Replayed, true
	case "snapshot_id":
		return p.SnapshotID, true
	case "plan_ms":
		return ms(p.Plan), true
	case "read_ms":
		return ms(p.Read), true
	case "process_ms":
		return ms(p.Process), true
	case "commit_ms", "commit_latency_ms":
		return ms(p.Commit), true
	case "total_ms", "duration_ms", "batch_ms":
		return ms(p.Total), true
	case "lag", "lag_records":
		return p.Lag, true
	case "rows_per_second", "records_per_second", "input_rows_per_second":
		return p.RecordsPerSecond(), true
	case "rows_dropped_by_watermark", "dropped_by_watermark":
		return p.Stats.DroppedByWatermark, true
	case "duplicates_dropped", "duplicates":
		return p.Stats.Duplicates, true
	case "unparseable":
		return p.Stats.Unparseable, true
	case "watermark":
		if p.Stats.Watermark.IsZero() {
			return nil, true
		}
		return p.Stats.Watermark, true
	case "query_id_changes", "query_id_changed":
		return p.QueryIDChanges, true
	case "previous_query_id":
		return p.PreviousQueryID, true
	}
	return nil, false
}

// progressRecord builds one record of rows in schema, filling columns by
// name (see progressValue). Unknown nullable columns are null; an unknown
// non-nullable column is an error.
func progressRecord(alloc memory.Allocator, schema *arrow.Schema, rows []Progress) (arrow.RecordBatch, error) {
	rb := array.NewRecordBuilder(alloc, schema)
	defer rb.Release()
	for i, f := range schema.Fields() {
		b := rb.Field(i)
		for _, p := range rows {
			v, ok := progressValue(p, f.Name)
			if !ok {
				if !f.Nullable {
					return nil, fmt.Errorf("build progress rows: column %s has no value", f.Name)
				}
				b.AppendNull()
				continue
			}
			if err := appendAny(b, v); err != nil {
				return nil, fmt.Errorf("build progress rows: column %s: %w", f.Name, err)
			}
		}
	}
	return rb.NewRecordBatch(), nil
}

// appendAny appends v (string, int64, float64, bool or time.Time) to b,
// converting to the builder's type.
func appendAny(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(fmt.Sprint(v))
	case *array.LargeStringBuilder:
		b.Append(fmt.Sprint(v))
	case *array.BinaryBuilder:
		b.Append([]byte(fmt.Sprint(v)))
	case *array.Int64Builder:
		n, err := toInt(v)
		if err != nil {
			return err
		}
		b.Append(n)
	case *array.Int32Builder:
		n, err := toInt(v)
		if err != nil {
			return err
		}
		b.Append(int32(n))
	case *array.Float64Builder:
		switch x := v.(type) {
		case float64:
			b.Append(x)
		case int64:
			b.Append(float64(x))
		default:
			return fmt.Errorf("cannot store %T as float64", v)
		}
	case *array.Float32Builder:
		switch x := v.(type) {
		case float64:
			b.Append(float32(x))
		case int64:
			b.Append(float32(x))
		default:
			return fmt.Errorf("cannot store %T as float32", v)
		}
	case *array.BooleanBuilder:
		switch x := v.(type) {
		case bool:
			b.Append(x)
		case int64:
			b.Append(x != 0)
		default:
			return fmt.Errorf("cannot store %T as bool", v)
		}
	case *array.TimestampBuilder:
		t, ok := v.(time.Time)
		if !ok {
			return fmt.Errorf("cannot store %T as timestamp", v)
		}
		ts, err := arrow.TimestampFromTime(t, b.Type().(*arrow.TimestampType).Unit)
		if err != nil {
			return err
		}
		b.Append(ts)
	default:
		return fmt.Errorf("unsupported column type %T", b)
	}
	return nil
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case float64:
		return int64(x), nil
	}
	return 0, fmt.Errorf("cannot store %T as integer", v)
}
