package stream

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/broker"
)

// rowBuilder fills a record of a bronze-like schema from broker messages,
// column by column name (the columns headers names from the message header
// each maps to), so the stream package does not depend on the exact Arrow
// types the table chose (string or binary value, int32 or int64 partition,
// any timestamp unit).
type rowBuilder struct {
	rb   *array.RecordBuilder
	cols []func(m broker.Message, ingest time.Time)
	rows int
	// keyCol and valCol are the key and value data buffers, for reserve.
	keyCol, valCol *array.BinaryBuilder
}

func newRowBuilder(alloc memory.Allocator, schema *arrow.Schema, headers map[string]string) (*rowBuilder, error) {
	if schema == nil {
		return nil, fmt.Errorf("build rows: nil schema")
	}
	rb := array.NewRecordBuilder(alloc, schema)
	r := &rowBuilder{rb: rb}
	for i, f := range schema.Fields() {
		b := rb.Field(i)
		var fn func(m broker.Message, ingest time.Time)
		known := true
		switch f.Name {
		case "broker_partition":
			fn = intCol(b, func(m broker.Message) int64 { return int64(m.Partition) })
		case "broker_offset":
			fn = intCol(b, func(m broker.Message) int64 { return m.Offset })
		case "broker_ts", "timestamp":
			fn = timeCol(b, func(m broker.Message, _ time.Time) time.Time { return m.Timestamp })
		case "ingest_ts":
			fn = timeCol(b, func(_ broker.Message, t time.Time) time.Time { return t })
		case "key":
			fn = bytesCol(b, func(m broker.Message) []byte { return m.Key }, f.Nullable)
			r.keyCol = binaryOf(b)
		case "value":
			fn = bytesCol(b, func(m broker.Message) []byte { return m.Value }, false)
			r.valCol = binaryOf(b)
		default:
			key, ok := headers[f.Name]
			if !ok {
				known = false
				break
			}
			fn = bytesCol(b, func(m broker.Message) []byte { return m.Header(key) }, f.Nullable)
		}
		if !known {
			if !f.Nullable {
				rb.Release()
				return nil, fmt.Errorf("build rows: column %s (%s) is not nullable and has no source", f.Name, f.Type)
			}
			fn = func(broker.Message, time.Time) { b.AppendNull() }
		}
		if fn == nil {
			rb.Release()
			return nil, fmt.Errorf("build rows: column %s has unsupported type %s", f.Name, f.Type)
		}
		r.cols = append(r.cols, fn)
	}
	return r, nil
}

// reserve makes room for rows more rows holding keyBytes and valueBytes.
func (r *rowBuilder) reserve(rows, keyBytes, valueBytes int) {
	r.rb.Reserve(rows)
	if r.keyCol != nil {
		r.keyCol.ReserveData(keyBytes)
	}
	if r.valCol != nil {
		r.valCol.ReserveData(valueBytes)
	}
}

func (r *rowBuilder) add(m broker.Message, ingest time.Time) {
	for _, c := range r.cols {
		c(m, ingest)
	}
	r.rows++
}

func (r *rowBuilder) build() arrow.RecordBatch {
	r.rows = 0
	return r.rb.NewRecordBatch()
}

func (r *rowBuilder) release() { r.rb.Release() }

func intCol(b array.Builder, get func(broker.Message) int64) func(broker.Message, time.Time) {
	switch b := b.(type) {
	case *array.Int32Builder:
		return func(m broker.Message, _ time.Time) { b.Append(int32(get(m))) }
	case *array.Int64Builder:
		return func(m broker.Message, _ time.Time) { b.Append(get(m)) }
	}
	return nil
}

func timeCol(b array.Builder, get func(broker.Message, time.Time) time.Time) func(broker.Message, time.Time) {
	tb, ok := b.(*array.TimestampBuilder)
	if !ok {
		return nil
	}
	unit := tb.Type().(*arrow.TimestampType).Unit
	return func(m broker.Message, ingest time.Time) {
		t := get(m, ingest)
		if t.IsZero() {
			tb.AppendNull()
			return
		}
		v, err := arrow.TimestampFromTime(t, unit)
		if err != nil {
			tb.AppendNull()
			return
		}
		tb.Append(v)
	}
}

func binaryOf(b array.Builder) *array.BinaryBuilder {
	switch b := b.(type) {
	case *array.BinaryBuilder:
		return b
	case *array.StringBuilder:
		return b.BinaryBuilder
	case *array.LargeStringBuilder:
		return b.BinaryBuilder
	}
	return nil
}

func bytesCol(b array.Builder, get func(broker.Message) []byte, nullable bool) func(broker.Message, time.Time) {
	bb := binaryOf(b)
	if bb == nil {
		return nil
	}
	return func(m broker.Message, _ time.Time) {
		v := get(m)
		if v == nil && nullable {
			bb.AppendNull()
			return
		}
		bb.Append(v)
	}
}
