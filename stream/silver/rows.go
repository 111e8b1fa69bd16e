package silver

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/table"
)

// editBuilder builds silver.edits records (table.SilverEditsSchema), column
// by name.
type editBuilder struct {
	rb                                               *array.RecordBuilder
	processed                                        int64 // processed_time, Unix µs
	eventID, wiki, typ, title, user, comment, server *array.StringBuilder
	eventTime, intakeTime, processedTime             *array.TimestampBuilder
	namespace, srcPartition                          *array.Int32Builder
	lengthOld, lengthNew, byteDelta, revOld, revNew  *array.Int64Builder
	srcOffset                                        *array.Int64Builder
	bot, minor                                       *array.BooleanBuilder
}

func newEditBuilder(alloc memory.Allocator, processed time.Time) (*editBuilder, error) {
	sc := table.SilverEditsSchema
	rb := array.NewRecordBuilder(alloc, sc)
	b := &editBuilder{rb: rb, processed: processed.UnixMicro()}
	targets := map[string]any{
		"event_id": &b.eventID, "wiki": &b.wiki, "type": &b.typ, "title": &b.title, "user": &b.user,
		"comment": &b.comment, "server_name": &b.server,
		"event_time": &b.eventTime, "intake_time": &b.intakeTime, "processed_time": &b.processedTime,
		"namespace": &b.namespace, "src_partition": &b.srcPartition,
		"length_old": &b.lengthOld, "length_new": &b.lengthNew, "byte_delta": &b.byteDelta,
		"rev_old": &b.revOld, "rev_new": &b.revNew, "src_offset": &b.srcOffset,
		"bot": &b.bot, "minor": &b.minor,
	}
	for i, f := range sc.Fields() {
		t, ok := targets[f.Name]
		if !ok {
			rb.Release()
			return nil, fmt.Errorf("build silver rows: unknown column %q", f.Name)
		}
		ok = false
		switch t := t.(type) {
		case **array.StringBuilder:
			*t, ok = rb.Field(i).(*array.StringBuilder)
		case **array.TimestampBuilder:
			*t, ok = rb.Field(i).(*array.TimestampBuilder)
			if ok && (*t).Type().(*arrow.TimestampType).Unit != arrow.Microsecond {
				ok = false
			}
		case **array.Int32Builder:
			*t, ok = rb.Field(i).(*array.Int32Builder)
		case **array.Int64Builder:
			*t, ok = rb.Field(i).(*array.Int64Builder)
		case **array.BooleanBuilder:
			*t, ok = rb.Field(i).(*array.BooleanBuilder)
		}
		if !ok {
			rb.Release()
			return nil, fmt.Errorf("build silver rows: column %q has unexpected type %s", f.Name, f.Type)
		}
		delete(targets, f.Name)
	}
	if len(targets) > 0 {
		rb.Release()
		return nil, fmt.Errorf("build silver rows: schema lacks %d columns", len(targets))
	}
	return b, nil
}

func (b *editBuilder) add(e *edit, partition int32, offset int64) {
	b.eventID.Append(e.ID)
	b.eventTime.Append(arrow.Timestamp(e.EventTime))
	b.intakeTime.Append(arrow.Timestamp(e.IntakeTime))
	b.wiki.Append(e.Wiki)
	b.typ.Append(e.Type)
	b.namespace.Append(e.Namespace)
	b.title.Append(e.Title)
	b.user.Append(e.User)
	b.bot.Append(e.Bot)
	appendOptBool(b.minor, e.Minor)
	appendOptInt(b.lengthOld, e.LengthOld)
	b.lengthNew.Append(e.LengthNew)
	b.byteDelta.Append(e.byteDelta())
	appendOptInt(b.revOld, e.RevOld)
	b.revNew.Append(e.RevNew)
	if e.Comment == nil {
		b.comment.AppendNull()
	} else {
		b.comment.Append(*e.Comment)
	}
	b.server.Append(e.ServerName)
	b.srcPartition.Append(partition)
	b.srcOffset.Append(offset)
	b.processedTime.Append(arrow.Timestamp(b.processed))
}

func appendOptBool(b *array.BooleanBuilder, v *bool) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.Append(*v)
}

func appendOptInt(b *array.Int64Builder, v *int64) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.Append(*v)
}

func (b *editBuilder) build() arrow.RecordBatch { return b.rb.NewRecordBatch() }

func (b *editBuilder) release() { b.rb.Release() }
