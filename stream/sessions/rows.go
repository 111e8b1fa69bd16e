package sessions

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/table"
)

// buildSessions renders closed sessions as one silver.editor_sessions
// record (table.EditorSessionsSchema), filling columns by name.
func buildSessions(alloc memory.Allocator, done []closed, processed time.Time) (arrow.RecordBatch, error) {
	sc := table.EditorSessionsSchema
	rb := array.NewRecordBuilder(alloc, sc)
	defer rb.Release()
	for i, f := range sc.Fields() {
		var (
			str  func(closed) string
			num  func(closed) int64
			ts   func(closed) int64
			flag func(closed) bool
		)
		switch f.Name {
		case "session_id":
			str = func(s closed) string { return s.ID }
		case "wiki":
			str = func(s closed) string { return s.Wiki }
		case "user":
			str = func(s closed) string { return s.User }
		case "bot":
			flag = func(s closed) bool { return s.Bot }
		case "session_start":
			ts = func(s closed) int64 { return s.Start }
		case "session_end":
			ts = func(s closed) int64 { return s.End }
		case "processed_time":
			ts = func(closed) int64 { return processed.UnixMicro() }
		case "edits":
			num = func(s closed) int64 { return s.Edits }
		case "pages":
			num = func(s closed) int64 { return int64(s.Pages.len()) }
		case "bytes_added":
			num = func(s closed) int64 { return s.Added }
		case "bytes_removed":
			num = func(s closed) int64 { return s.Removed }
		}
		ok := false
		switch b := rb.Field(i).(type) {
		case *array.StringBuilder:
			if ok = str != nil; ok {
				for _, s := range done {
					b.Append(str(s))
				}
			}
		case *array.Int64Builder:
			if ok = num != nil; ok {
				for _, s := range done {
					b.Append(num(s))
				}
			}
		case *array.BooleanBuilder:
			if ok = flag != nil; ok {
				for _, s := range done {
					b.Append(flag(s))
				}
			}
		case *array.TimestampBuilder:
			if ok = ts != nil && b.Type().(*arrow.TimestampType).Unit == arrow.Microsecond; ok {
				for _, s := range done {
					b.Append(arrow.Timestamp(ts(s)))
				}
			}
		}
		if !ok {
			return nil, fmt.Errorf("build session rows: column %q (%s) is unknown or mistyped", f.Name, f.Type)
		}
	}
	return rb.NewRecordBatch(), nil
}
