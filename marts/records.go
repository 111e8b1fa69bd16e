package marts

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// maxRecordRows bounds the rows of one Arrow record built from a query.
const maxRecordRows = 64 << 10

// rowsToRecords reads rows into Arrow records of schema. The result's column
// names must equal the schema's, in order; values are converted by the
// schema's types (string, int32, int64, float64, bool, date32,
// timestamp[us]). A NULL in a non-nullable column is an error.
func rowsToRecords(rows *sql.Rows, schema *arrow.Schema) ([]arrow.RecordBatch, error) {
	names, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("read columns: %w", err)
	}
	if len(names) != schema.NumFields() {
		return nil, fmt.Errorf("read rows: got %d columns %v, want %d", len(names), names, schema.NumFields())
	}
	for i, n := range names {
		if want := schema.Field(i).Name; n != want {
			return nil, fmt.Errorf("read rows: column %d is %q, want %q", i, n, want)
		}
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	vals := make([]any, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []arrow.RecordBatch
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("scan row: %w", err)
		}
		for i, v := range vals {
			f := schema.Field(i)
			if v == nil {
				if !f.Nullable {
					return nil, fmt.Errorf("read rows: NULL in required column %q", f.Name)
				}
				b.Field(i).AppendNull()
				continue
			}
			if err := appendValue(b.Field(i), v); err != nil {
				return nil, fmt.Errorf("read rows: column %q: %w", f.Name, err)
			}
		}
		if n++; n == maxRecordRows {
			out = append(out, b.NewRecordBatch())
			n = 0
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	if n > 0 || len(out) == 0 {
		out = append(out, b.NewRecordBatch())
	}
	return out, nil
}

func appendValue(b array.Builder, v any) error {
	switch b := b.(type) {
	case *array.StringBuilder:
		switch v := v.(type) {
		case string:
			b.Append(v)
		case []byte:
			b.Append(string(v))
		default:
			return fmt.Errorf("got %T, want string", v)
		}
	case *array.Int32Builder:
		x, err := asInt64(v)
		if err != nil {
			return err
		}
		b.Append(int32(x))
	case *array.Int64Builder:
		x, err := asInt64(v)
		if err != nil {
			return err
		}
		b.Append(x)
	case *array.Float64Builder:
		switch v := v.(type) {
		case float64:
			b.Append(v)
		case float32:
			b.Append(float64(v))
		default:
			x, err := asInt64(v)
			if err != nil {
				return err
			}
			b.Append(float64(x))
		}
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return fmt.Errorf("got %T, want bool", v)
		}
		b.Append(x)
	case *array.Date32Builder:
		t, ok := v.(time.Time)
		if !ok {
			return fmt.Errorf("got %T, want date", v)
		}
		b.Append(arrow.Date32FromTime(t.UTC()))
	case *array.TimestampBuilder:
		t, ok := v.(time.Time)
		if !ok {
			return fmt.Errorf("got %T, want timestamp", v)
		}
		b.Append(arrow.Timestamp(t.UnixMicro()))
	default:
		return fmt.Errorf("unsupported builder %T", b)
	}
	return nil
}

func asInt64(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case int32:
		return int64(v), nil
	case int16:
		return int64(v), nil
	case int8:
		return int64(v), nil
	case uint32:
		return int64(v), nil
	case uint16:
		return int64(v), nil
	case uint8:
		return int64(v), nil
	case int:
		return int64(v), nil
	default:
		return 0, fmt.Errorf("got %T, want integer", v)
	}
}
