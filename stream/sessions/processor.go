package sessions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/internal/fault"
	"lakehouse/stream"
	"lakehouse/stream/lakeio"
)

// hookStateEncoded fires between encoding state N and the runner's durable
// write of it: batch N's state is lost, its table commit has not happened.
var hookStateEncoded = fault.Register("sessions.state-encoded",
	"sessions state N encoded, not yet durable; batch N not committed")

var (
	_ stream.StatefulProcessor = (*Processor)(nil)
	_ stream.MetaPlanner       = (*Processor)(nil)
	_ stream.StatsReporter     = (*Processor)(nil)
)

// Processor is the sessions query's processor: stream's event-time driver
// (watermark planning, state versions, counters) around the sessions fold.
// It is used by one query runner at a time.
type Processor struct {
	*stream.EventDriver[*state]
	f *fold
}

// fold is what sessions adds to the event-time driver.
type fold struct {
	cfg   Config
	alloc memory.Allocator
	edits []edit // Fold's on-time rows, reused
}

// NewProcessor returns a sessions processor. Its state versions come from
// the store the runner hands to LoadState.
func NewProcessor(cfg Config) *Processor {
	f := &fold{cfg: cfg.withDefaults(), alloc: memory.DefaultAllocator}
	return &Processor{EventDriver: stream.NewEventDriver[*state](f, f.cfg.WatermarkDelay, hookStateEncoded), f: f}
}

// Config returns the processor's configuration with defaults filled in.
func (p *Processor) Config() Config { return p.f.cfg }

// Props returns the snapshot-summary properties of batch b (after it was
// processed): its watermark, counters and the state version it produced.
func (p *Processor) Props(b stream.Batch) map[string]string {
	batch, stats := p.LastStats()
	return lakeio.BatchProps(b, batch, stats)
}

// OpenSessions returns the number of open sessions held in state.
func (p *Processor) OpenSessions() int {
	st, ok := p.State()
	if !ok {
		return 0
	}
	n := 0
	for _, ed := range st.Editors {
		n += len(ed.Sessions)
	}
	return n
}

// state returns the held state (nil: none), for tests.
func (p *Processor) state() *state {
	st, _ := p.State()
	return st
}

// Rebuild returns state version v from store and the deltas before it. A
// version the store does not have (it was lost, and the query continues
// from the table's marker) is replaced by an empty state, logged; a broken
// delta chain is an error.
func (f *fold) Rebuild(_ context.Context, store stream.StateStore, v int64) (*state, error) {
	var load loader
	if store != nil {
		load = store.LoadState
	}
	st, err := rebuild(v, nil, load)
	if errors.Is(err, stream.ErrNoEntry) {
		f.cfg.Logger.Error("SESSIONS STATE LOST: starting with no open sessions", "version", v, "err", err)
		st, err = newState(v), nil
	}
	return st, err
}

// Encode returns the open sessions after the last processed batch: a delta
// of what that batch changed, or a full snapshot every MaxDeltaChain
// versions (and whenever the deltas since the last snapshot outgrow the
// live state, or the batch's changes are not known: the state was just
// rebuilt).
func (f *fold) Encode(s *state, dst []byte) ([]byte, error) {
	kind := byte(kindFull)
	var units int
	if s.tracked && s.lastFull >= 0 && s.Version-s.lastFull < int64(f.cfg.MaxDeltaChain) {
		if units = s.pendingUnits(); s.units+units <= s.liveUnits() {
			kind = kindDelta
		}
	}
	b := s.encode(kind, dst)
	if kind == kindFull {
		s.lastFull, s.units = s.Version, 0
	} else {
		s.units += units
	}
	return b, nil
}

// Fold folds silver rows into open sessions and emits the sessions the
// batch's watermark closes.
func (f *fold) Fold(_ context.Context, s *state, b stream.Batch, meta stream.EventTimeMeta, in []arrow.RecordBatch) ([]arrow.RecordBatch, stream.ProcessStats, error) {
	var c stream.ProcessStats
	s.resetDelta()
	wm := meta.WatermarkMicros()
	maxLen := f.cfg.maxLength()
	if wm != noTime && s.MaxEvent != noTime && s.MaxEvent-wm >= maxLen {
		// Planned with a longer delay than the maximum (a changed
		// configuration): splits may then depend on the batching.
		f.cfg.Logger.Error("sessions: watermark trails the newest event by more than the maximum session length",
			"batch", b.ID, "lag", time.Duration(s.MaxEvent-wm)*time.Microsecond, "max", f.cfg.MaxSessionLength)
	}
	s.release(wm, f.cfg.SessionGap, maxLen)
	maxEvent := s.MaxEvent
	edits := f.edits[:0]
	for _, rec := range in {
		cols, err := silverColumns(rec)
		if err != nil {
			return nil, c, fmt.Errorf("sessions: %w", err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			e := cols.edit(i)
			maxEvent = max(maxEvent, e.At)
			if wm != noTime && e.At < wm {
				c.DroppedByWatermark++
				continue
			}
			edits = append(edits, e)
		}
	}
	// In event time (stable: ties keep silver's order), which the exact
	// maximum length relies on (see state.add).
	slices.SortStableFunc(edits, func(a, b edit) int { return cmp.Compare(a.At, b.At) })
	for _, e := range edits {
		s.add(e, f.cfg.SessionGap, maxLen)
	}
	clear(edits) // they point into the batch's Arrow buffers
	f.edits = edits[:0]
	if c.DroppedByWatermark > 0 {
		f.cfg.Logger.Warn("sessions: late silver rows dropped", "batch", b.ID, "count", c.DroppedByWatermark)
	}
	closed := s.close(wm, f.cfg.SessionGap)
	s.Version, s.MaxEvent, s.Watermark = b.ID, maxEvent, wm

	rec, err := buildSessions(f.alloc, closed, meta.Planned)
	if err != nil {
		return nil, c, fmt.Errorf("sessions: %w", err)
	}
	s.tracked = true
	return []arrow.RecordBatch{rec}, c, nil
}

// silverCols reads the silver.edits columns sessions needs, by name.
type silverCols struct {
	at               *array.Timestamp
	wiki, user, page *array.String
	bot              *array.Boolean
	delta            *array.Int64
}

func silverColumns(rec arrow.RecordBatch) (silverCols, error) {
	var c silverCols
	for i, f := range rec.Schema().Fields() {
		switch f.Name {
		case "event_time":
			c.at, _ = rec.Column(i).(*array.Timestamp)
			if tt, ok := f.Type.(*arrow.TimestampType); !ok || tt.Unit != arrow.Microsecond {
				c.at = nil
			}
		case "wiki":
			c.wiki, _ = rec.Column(i).(*array.String)
		case "user":
			c.user, _ = rec.Column(i).(*array.String)
		case "title":
			c.page, _ = rec.Column(i).(*array.String)
		case "bot":
			c.bot, _ = rec.Column(i).(*array.Boolean)
		case "byte_delta":
			c.delta, _ = rec.Column(i).(*array.Int64)
		}
	}
	if c.at == nil || c.wiki == nil || c.user == nil || c.page == nil || c.bot == nil || c.delta == nil {
		return c, fmt.Errorf("read silver rows: missing or mistyped columns in %s", rec.Schema())
	}
	return c, nil
}

func (c silverCols) edit(i int) edit {
	return edit{Wiki: c.wiki.Value(i), User: c.user.Value(i), Title: c.page.Value(i),
		Bot: c.bot.Value(i), At: int64(c.at.Value(i)), Delta: c.delta.Value(i)}
}
