package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/internal/fault"
)

// EventState is the state of an event-time query after one of its batches.
type EventState interface {
	// StateVersion is the batch the state is after (-1: before the first).
	StateVersion() int64
	// Clock is the watermark that batch used and the newest event time
	// seen, in Unix microseconds (NoTime: none).
	Clock() (watermark, maxEvent int64)
}

// EventFold is what an event-time query (silver, sessions) adds to the
// EventDriver: how its state is rebuilt, folded and encoded.
type EventFold[S EventState] interface {
	// Rebuild returns state version v, reading from store (which may be
	// nil) the versions it needs; v < 0 is the empty state. A version the
	// store lacks or holds corrupt is the fold's to handle (rebuilt from
	// its table, or empty and logged, or an error).
	Rebuild(ctx context.Context, store StateStore, v int64) (S, error)
	// Fold folds batch b's rows into st in place, with the watermark meta
	// fixed for the batch, and returns the rows to commit and the batch's
	// counters. The driver releases in. After an error st is dropped.
	Fold(ctx context.Context, st S, b Batch, meta EventTimeMeta, in []arrow.RecordBatch) ([]arrow.RecordBatch, ProcessStats, error)
	// Encode appends st's durable form (a delta or a full snapshot, as the
	// fold decides) to dst[:0].
	Encode(st S, dst []byte) ([]byte, error)
}

// EventDriver is the processor of an event-time query: it plans each batch's
// watermark from the state before it (NextWatermark: the newest event time
// minus Delay, never going back), keeps the state version by version
// (loaded from the runner's store only when it holds another version,
// dropped when a fold fails half-way, encoded for the runner to save), and
// reports each batch's counters. The query's own work is its EventFold. It
// implements StatefulProcessor, MetaPlanner and StatsReporter, and is used
// by one runner at a time.
type EventDriver[S EventState] struct {
	fold  EventFold[S]
	delay time.Duration
	hook  string           // fault hook hit once the state is encoded ("": none)
	now   func() time.Time // the planned time stamped in each batch's meta

	store      StateStore
	st         S
	held       bool
	buf        []byte // Encode's buffer, kept while small (KeepStateBuffer)
	stats      ProcessStats
	statsBatch int64
}

// NewEventDriver returns the driver of fold with watermark delay; hook names
// the fault hook hit between encoding a state and the runner's durable
// write of it ("" for none).
func NewEventDriver[S EventState](fold EventFold[S], delay time.Duration, hook string) *EventDriver[S] {
	return &EventDriver[S]{fold: fold, delay: delay, hook: hook, now: time.Now, statsBatch: -1}
}

// ensure makes the held state version v.
func (p *EventDriver[S]) ensure(ctx context.Context, v int64) error {
	if p.held && p.st.StateVersion() == v {
		return nil
	}
	st, err := p.fold.Rebuild(ctx, p.store, v)
	if err != nil {
		return err
	}
	p.st, p.held = st, true
	return nil
}

// LoadState makes the state version, reading from store only when another
// version is held (StatefulProcessor).
func (p *EventDriver[S]) LoadState(ctx context.Context, store StateStore, version int64) error {
	p.store = store
	return p.ensure(ctx, version)
}

// PlanMeta fixes batch b's watermark from the state before it (MetaPlanner).
func (p *EventDriver[S]) PlanMeta(ctx context.Context, b Batch) (json.RawMessage, error) {
	if err := p.ensure(ctx, b.ID-1); err != nil {
		return nil, fmt.Errorf("plan batch %d: %w", b.ID, err)
	}
	wm, maxEvent := p.st.Clock()
	return PlanEventTimeMeta(wm, maxEvent, p.delay, p.now())
}

// Process folds batch b into the state after batch b-1 (Processor).
func (p *EventDriver[S]) Process(ctx context.Context, b Batch, in []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	defer release(in)
	meta, err := ParseEventTimeMeta(b.Meta)
	if err != nil {
		return nil, fmt.Errorf("process batch %d: %w", b.ID, err)
	}
	if err := p.ensure(ctx, b.ID-1); err != nil {
		return nil, fmt.Errorf("process batch %d: %w", b.ID, err)
	}
	out, c, err := p.fold.Fold(ctx, p.st, b, meta, in)
	if err != nil {
		var zero S
		p.st, p.held = zero, false // partly applied: rebuilt from the store next time
		return nil, fmt.Errorf("process batch %d: %w", b.ID, err)
	}
	c.Watermark = meta.Watermark
	p.stats, p.statsBatch = c, b.ID
	return out, nil
}

// SaveState encodes the state after the last processed batch
// (StatefulProcessor). The bytes are valid until the next SaveState.
func (p *EventDriver[S]) SaveState(context.Context) ([]byte, error) {
	if !p.held {
		return nil, errors.New("save state: nothing processed")
	}
	b, err := p.fold.Encode(p.st, p.buf)
	if err != nil {
		return nil, err
	}
	p.buf = KeepStateBuffer(b)
	if p.hook != "" {
		fault.Hit(p.hook)
	}
	return b, nil
}

// BatchStats returns the counters of the last processed batch
// (StatsReporter).
func (p *EventDriver[S]) BatchStats() ProcessStats { return p.stats }

// LastStats returns the last processed batch and its counters (batch -1:
// none yet): a sink's summary properties are the batch's when they match.
func (p *EventDriver[S]) LastStats() (int64, ProcessStats) { return p.statsBatch, p.stats }

// State returns the held state (false: none).
func (p *EventDriver[S]) State() (S, bool) { return p.st, p.held }

// StateDir says where the store keeps the versions ("" without one).
func (p *EventDriver[S]) StateDir() string {
	if p.store == nil {
		return ""
	}
	return p.store.StateDir()
}

var (
	_ StatefulProcessor = (*EventDriver[EventState])(nil)
	_ MetaPlanner       = (*EventDriver[EventState])(nil)
	_ StatsReporter     = (*EventDriver[EventState])(nil)
)
