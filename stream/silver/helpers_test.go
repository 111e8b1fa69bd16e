package silver

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/internal/sample"
	"lakehouse/stream"
	"lakehouse/stream/silver/silvertest"
	"lakehouse/table"
)

// base is the tests' start of event time.
var base = silvertest.Base

// ev describes one generated event (see silvertest.Event).
type ev = silvertest.Event

// uuidFor makes a deterministic version-4 UUID from n.
func uuidFor(n int) string { return silvertest.UUID(n) }

// eventJSON renders e the way the wire does (null fields omitted).
func eventJSON(e ev) []byte { return e.JSON() }

// bronzeRecord builds a bronze record of raw values at offsets from..from+n-1
// of partition 0.
func bronzeRecord(t testing.TB, from int64, values ...[]byte) arrow.RecordBatch {
	t.Helper()
	rb := array.NewRecordBuilder(memory.DefaultAllocator, table.BronzeSchema)
	defer rb.Release()
	now := arrow.Timestamp(time.Now().UnixMicro())
	for i, v := range values {
		rb.Field(0).(*array.Int32Builder).Append(0)
		rb.Field(1).(*array.Int64Builder).Append(from + int64(i))
		rb.Field(2).(*array.TimestampBuilder).Append(now)
		rb.Field(3).(*array.StringBuilder).AppendNull()
		rb.Field(4).(*array.StringBuilder).Append(string(v))
		rb.Field(5).(*array.TimestampBuilder).Append(now)
	}
	return rb.NewRecordBatch()
}

// harness drives a Processor the way stream's runner does: PlanMeta,
// LoadState(N-1), Process, SaveState -> checkpoint state/N.
type harness struct {
	t    testing.TB
	cp   *stream.Checkpoint
	p    *Processor
	next int64
	off  int64
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

// batchResult is one processed batch.
type batchResult struct {
	IDs    []string
	Counts struct{ Late, Duplicates, Unparseable int64 }
	Meta   Meta
}

// run processes one batch of raw events through p (a new batch id, or
// replay of id when replay >= 0).
func (h *harness) run(p *Processor, replay int64, values ...[]byte) batchResult {
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
	rec := bronzeRecord(h.t, h.off, values...)
	h.off += int64(len(values))
	out, err := p.Process(ctx, b, []arrow.RecordBatch{rec})
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
	var r batchResult
	for _, o := range out {
		col := o.Column(0).(*array.String)
		for i := 0; i < col.Len(); i++ {
			r.IDs = append(r.IDs, col.Value(i))
		}
		o.Release()
	}
	c := p.BatchStats()
	if !c.Watermark.Equal(mustMeta(h.t, b.Meta).Watermark) {
		h.t.Fatalf("batch %d stats watermark %v, meta %v", id, c.Watermark, mustMeta(h.t, b.Meta).Watermark)
	}
	r.Counts.Late, r.Counts.Duplicates, r.Counts.Unparseable = c.DroppedByWatermark, c.Duplicates, c.Unparseable
	r.Meta, _ = ParseMeta(b.Meta)
	return r
}

func (h *harness) batch(values ...[]byte) batchResult {
	h.t.Helper()
	return h.run(h.p, -1, values...)
}

func sampleEvents(t testing.TB) [][]byte {
	t.Helper()
	return sample.Events()
}

func mustMeta(t testing.TB, raw json.RawMessage) Meta {
	t.Helper()
	m, err := ParseMeta(raw)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
