package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/stream"
	"lakehouse/table"
)

// silverRecord builds silver.edits rows for edits (other columns filled
// with plausible constants).
func silverRecord(t testing.TB, edits []edit) arrow.RecordBatch {
	t.Helper()
	rb := array.NewRecordBuilder(memory.DefaultAllocator, table.SilverEditsSchema)
	defer rb.Release()
	for i, f := range table.SilverEditsSchema.Fields() {
		b := rb.Field(i)
		for n, e := range edits {
			switch f.Name {
			case "event_id":
				b.(*array.StringBuilder).Append(e.Wiki + "/" + e.User + "/" + time.UnixMicro(e.At).UTC().Format(time.RFC3339))
			case "event_time", "intake_time", "processed_time":
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(e.At))
			case "wiki":
				b.(*array.StringBuilder).Append(e.Wiki)
			case "user":
				b.(*array.StringBuilder).Append(e.User)
			case "title":
				b.(*array.StringBuilder).Append(e.Title)
			case "bot":
				b.(*array.BooleanBuilder).Append(e.Bot)
			case "byte_delta":
				b.(*array.Int64Builder).Append(e.Delta)
			case "type", "server_name", "comment":
				b.(*array.StringBuilder).Append("edit")
			case "namespace", "src_partition":
				b.(*array.Int32Builder).Append(0)
			case "minor":
				b.(*array.BooleanBuilder).Append(false)
			default: // lengths, revisions, src_offset
				b.(*array.Int64Builder).Append(int64(n))
			}
		}
	}
	return rb.NewRecordBatch()
}

// harness drives a Processor as stream's runner does.
type harness struct {
	t    testing.TB
	cp   *stream.Checkpoint
	p    *Processor
	next int64
	meta map[int64]json.RawMessage
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	cp, err := stream.OpenCheckpoint(filepath.Join(t.TempDir(), "cp"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &harness{t: t, cp: cp, p: NewProcessor(cfg), meta: map[int64]json.RawMessage{}}
}

// sessionRow is one emitted row, decoded.
type sessionRow struct {
	ID, Wiki, User string
	Bot            bool
	Start, End     time.Time
	Edits, Pages   int64
	Added, Removed int64
}

func (h *harness) run(p *Processor, replay int64, edits []edit) ([]sessionRow, int64) {
	h.t.Helper()
	ctx := context.Background()
	id := h.next
	if replay >= 0 {
		id = replay
	}
	b := stream.Batch{Query: QueryName, QueryID: "q", ID: id}
	// As the runner: state id-1 before planning and before processing.
	if err := p.LoadState(ctx, h.cp, id-1); err != nil {
		h.t.Fatal(err)
	}
	if replay < 0 {
		meta, err := p.PlanMeta(ctx, b)
		if err != nil {
			h.t.Fatal(err)
		}
		h.meta[id] = meta
		h.next++
	}
	b.Meta = h.meta[id]
	if err := p.LoadState(ctx, h.cp, id-1); err != nil {
		h.t.Fatal(err)
	}
	out, err := p.Process(ctx, b, []arrow.RecordBatch{silverRecord(h.t, edits)})
	if err != nil {
		h.t.Fatal(err)
	}
	st, err := p.SaveState(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.cp.SaveState(id, st); err != nil {
		h.t.Fatal(err)
	}
	var rows []sessionRow
	for _, rec := range out {
		rows = append(rows, decodeSessions(rec)...)
		rec.Release()
	}
	return rows, p.BatchStats().DroppedByWatermark
}

func decodeSessions(rec arrow.RecordBatch) []sessionRow {
	col := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		return rec.Column(idx[0])
	}
	str := func(n string, i int) string { return col(n).(*array.String).Value(i) }
	i64 := func(n string, i int) int64 { return col(n).(*array.Int64).Value(i) }
	ts := func(n string, i int) time.Time {
		return time.UnixMicro(int64(col(n).(*array.Timestamp).Value(i))).UTC()
	}
	var out []sessionRow
	for i := 0; i < int(rec.NumRows()); i++ {
		out = append(out, sessionRow{
			ID: str("session_id", i), Wiki: str("wiki", i), User: str("user", i),
			Bot: col("bot").(*array.Boolean).Value(i), Start: ts("session_start", i), End: ts("session_end", i),
			Edits: i64("edits", i), Pages: i64("pages", i), Added: i64("bytes_added", i), Removed: i64("bytes_removed", i),
		})
	}
	return out
}

// memStore is a stream.StateStore of versions held in memory.
type memStore map[int64][]byte

func (m memStore) LoadState(v int64) ([]byte, error) {
	b, ok := m[v]
	if !ok {
		return nil, fmt.Errorf("state %d: %w", v, stream.ErrNoEntry)
	}
	return b, nil
}

func (m memStore) StateDir() string { return "memory" }
