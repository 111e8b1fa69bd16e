package sessions

import (
	"cmp"
	"context"
	"encoding/json"
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

// Processor is the sessions query's stream.StatefulProcessor and
// stream.MetaPlanner. It is used by one query runner at a time.
type Processor struct {
	cfg   Config
	store stream.StateStore // where state versions are read from (the runner's, see LoadState); may be nil
	alloc memory.Allocator
	now   func() time.Time

	st    *state
	buf   []byte // SaveState's encoding buffer, reused while small (stream.KeepStateBuffer)
	edits []edit // Process's on-time rows, reused

	stats      stream.ProcessStats // of the last processed batch
	statsBatch int64               // which batch stats belongs to
}

// NewProcessor returns a sessions processor. Its state versions come from
// the store the runner hands to LoadState.
func NewProcessor(cfg Config) *Processor {
	return &Processor{cfg: cfg.withDefaults(), alloc: memory.DefaultAllocator, now: time.Now, statsBatch: -1}
}

// Config returns the processor's configuration with defaults filled in.
func (p *Processor) Config() Config { return p.cfg }

func (p *Processor) load() loader {
	if p.store == nil {
		return nil
	}
	return p.store.LoadState
}

// ensure makes the in-memory state version v, rebuilding it from the store
// if it is another version. A version the checkpoint does
// not have (it was lost, and the query continues from the table's marker)
// is replaced by an empty state, logged; a broken delta chain is an error.
func (p *Processor) ensure(v int64) error {
	if p.st != nil && p.st.Version == v {
		return nil
	}
	st, err := rebuild(v, nil, p.load())
	if errors.Is(err, stream.ErrNoEntry) {
		p.cfg.Logger.Error("SESSIONS STATE LOST: starting with no open sessions", "version", v, "err", err)
		st, err = newState(v), nil
	}
	if err != nil {
		return err
	}
	p.st = st
	return nil
}

// PlanMeta fixes batch b's watermark: the newest event time of the batches
// before it minus WatermarkDelay, never below the previous watermark.
func (p *Processor) PlanMeta(ctx context.Context, b stream.Batch) (json.RawMessage, error) {
	if err := p.ensure(b.ID - 1); err != nil {
		return nil, fmt.Errorf("plan sessions batch %d: %w", b.ID, err)
	}
	raw, err := stream.PlanEventTimeMeta(p.st.Watermark, p.st.MaxEvent, p.cfg.WatermarkDelay, p.now())
	if err != nil {
		return nil, fmt.Errorf("plan sessions batch %d: %w", b.ID, err)
	}
	return raw, nil
}

// LoadState makes the state version (after batch version), reading it, and
// the deltas' chain, from store when it holds another version
// (stream.StatefulProcessor).
func (p *Processor) LoadState(_ context.Context, store stream.StateStore, version int64) error {
	p.store = store
	return p.ensure(version)
}

// SaveState returns the open sessions after the last processed batch: a
// delta of what that batch changed, or a full snapshot every MaxDeltaChain
// versions (and whenever the deltas since the last snapshot outgrow the
// live state, or the batch's changes are not known: the state was just
// rebuilt). The returned bytes are only valid until the next SaveState
// call (the buffer is reused); the runner writes them durably before the
// next batch.
func (p *Processor) SaveState(context.Context) ([]byte, error) {
	s := p.st
	if s == nil {
		return nil, errors.New("save session state: nothing processed")
	}
	kind := byte(kindFull)
	var units int
	if s.tracked && s.lastFull >= 0 && s.Version-s.lastFull < int64(p.cfg.MaxDeltaChain) {
		if units = s.pendingUnits(); s.units+units <= s.liveUnits() {
			kind = kindDelta
		}
	}
	b := s.encode(kind, p.buf)
	p.buf = stream.KeepStateBuffer(b)
	if kind == kindFull {
		s.lastFull, s.units = s.Version, 0
	} else {
		s.units += units
	}
	fault.Hit(hookStateEncoded)
	return b, nil
}

// BatchStats returns the counters of the last processed batch
// (stream.StatsReporter): late and duplicate rows dropped, unparseable rows,
// and the watermark the batch used.
func (p *Processor) BatchStats() stream.ProcessStats { return p.stats }

// Props returns the snapshot-summary properties of batch b (after it was
// processed): its watermark, counters and the state version it produced.
func (p *Processor) Props(b stream.Batch) map[string]string {
	return lakeio.BatchProps(b, p.statsBatch, p.stats)
}

// OpenSessions returns the number of open sessions held in state.
func (p *Processor) OpenSessions() int {
	if p.st == nil {
		return 0
	}
	n := 0
	for _, ed := range p.st.Editors {
		n += len(ed.Sessions)
	}
	return n
}

// Process folds silver rows into open sessions and emits the sessions the
// batch's watermark closes.
func (p *Processor) Process(ctx context.Context, b stream.Batch, in []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	defer func() {
		for _, r := range in {
			r.Release()
		}
	}()
	meta, err := ParseMeta(b.Meta)
	if err != nil {
		return nil, fmt.Errorf("process sessions batch %d: %w", b.ID, err)
	}
	if err := p.ensure(b.ID - 1); err != nil {
		return nil, fmt.Errorf("process sessions batch %d: %w", b.ID, err)
	}
	s := p.st
	s.resetDelta()
	done := false
	defer func() {
		if !done {
			p.st = nil // partly applied: rebuild from the checkpoint next time
		}
	}()
	wm := meta.WatermarkMicros()
	c := stream.ProcessStats{Watermark: meta.Watermark}
	maxLen := p.cfg.maxLength()
	if wm != noTime && s.MaxEvent != noTime && s.MaxEvent-wm >= maxLen {
		// Planned with a longer delay than the maximum (a changed
		// configuration): splits may then depend on the batching.
		p.cfg.Logger.Error("sessions: watermark trails the newest event by more than the maximum session length",
			"batch", b.ID, "lag", time.Duration(s.MaxEvent-wm)*time.Microsecond, "max", p.cfg.MaxSessionLength)
	}
	s.release(wm, p.cfg.SessionGap, maxLen)
	maxEvent := s.MaxEvent
	edits := p.edits[:0]
	for _, rec := range in {
		cols, err := silverColumns(rec)
		if err != nil {
			return nil, fmt.Errorf("process sessions batch %d: %w", b.ID, err)
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
		s.add(e, p.cfg.SessionGap, maxLen)
	}
	clear(edits) // they point into the batch's Arrow buffers
	p.edits = edits[:0]
	if c.DroppedByWatermark > 0 {
		p.cfg.Logger.Warn("sessions: late silver rows dropped", "batch", b.ID, "count", c.DroppedByWatermark)
	}
	closed := s.close(wm, p.cfg.SessionGap)
	s.Version, s.MaxEvent, s.Watermark = b.ID, maxEvent, wm

	rec, err := buildSessions(p.alloc, closed, meta.Planned)
	if err != nil {
		return nil, fmt.Errorf("process sessions batch %d: %w", b.ID, err)
	}
	p.stats, p.statsBatch = c, b.ID
	s.tracked, done = true, true
	return []arrow.RecordBatch{rec}, nil
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
