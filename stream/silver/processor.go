package silver

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/internal/fault"
	"lakehouse/stream"
	"lakehouse/stream/lakeio"
	"lakehouse/table"
)

// hookStateEncoded fires between encoding state N and the runner's durable
// write of it: batch N's state is lost, its table commit has not happened.
var hookStateEncoded = fault.Register("silver.state-encoded",
	"silver state N encoded, not yet durable; batch N not committed")

var (
	_ stream.StatefulProcessor = (*Processor)(nil)
	_ stream.MetaPlanner       = (*Processor)(nil)
	_ stream.StatsReporter     = (*Processor)(nil)
)

// Processor is silver's processor: stream's event-time driver (watermark
// planning, state versions, counters) around the silver fold. It is used by
// one query runner at a time.
type Processor struct {
	*stream.EventDriver[*state]
	f *fold
}

// fold is what silver adds to the event-time driver: parsing, the late
// filter and deduplication within the watermark.
type fold struct {
	cfg   Config
	alloc memory.Allocator

	lake  *table.Lake // set by NewQuery: rebuilds a lost state from silver.edits
	query string
	store stream.StateStore // the last store Rebuild read from, for messages
}

// NewProcessor returns a silver processor. Its state versions come from the
// store the runner hands to LoadState.
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

// LiveIDs returns the number of ids in the dedup state (including expired
// ones not yet swept).
func (p *Processor) LiveIDs() int {
	st, ok := p.State()
	if !ok {
		return 0
	}
	return len(st.ids)
}

// state returns the held state (nil: none), for tests.
func (p *Processor) state() *state {
	st, _ := p.State()
	return st
}

// Rebuild returns state version v from store and the deltas before it.
//
// A version the store does not have (a lost checkpoint), or holds corrupt
// (a bad file, a broken delta chain), is rebuilt from silver.edits when the
// processor knows the lake: the table is the source of truth for what
// silver holds. Without the lake a lost state starts empty (logged) and a
// corrupt one is an error naming the state directory.
func (f *fold) Rebuild(ctx context.Context, store stream.StateStore, v int64) (*state, error) {
	f.store = store
	var load loader
	if store != nil {
		load = store.LoadState
	}
	st, err := rebuild(v, nil, load, f.cfg.WatermarkDelay)
	switch {
	case errors.Is(err, stream.ErrNoEntry):
		st, err = f.lostState(ctx, v, err)
	case errors.Is(err, ErrCorruptState) && f.lake != nil:
		f.cfg.Logger.Error("SILVER DEDUP STATE CORRUPT: rebuilding it from silver.edits; the corrupt files stay for inspection",
			"version", v, "state_dir", f.stateDir(), "err", err)
		st, err = f.lostState(ctx, v, err)
	case errors.Is(err, ErrCorruptState):
		err = fmt.Errorf("%w (in %s)", err, f.stateDir())
	}
	return st, err
}

// stateDir is where the store keeps the state versions ("" without one).
func (f *fold) stateDir() string {
	if f.store == nil {
		return ""
	}
	return f.store.StateDir()
}

// lostState replaces state version v when the store does not have it (the
// checkpoint was lost and the query continues from the table's marker):
// rebuilt from silver.edits when the processor knows the lake, otherwise
// empty.
func (f *fold) lostState(ctx context.Context, v int64, cause error) (*state, error) {
	if f.lake == nil {
		f.cfg.Logger.Error("SILVER DEDUP STATE LOST: starting with an empty state; resends of events already in silver will be written again",
			"version", v, "err", cause)
		return newState(v), nil
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.RecoverTimeout)
	defer cancel()
	st, err := stateFromTable(ctx, f.lake, f.query, v, f.cfg.WatermarkDelay)
	if err != nil {
		return nil, fmt.Errorf("state version %d lost (%v): %w", v, cause, err)
	}
	f.cfg.Logger.Error("SILVER DEDUP STATE LOST: rebuilt from silver.edits",
		"version", v, "ids", len(st.ids), "watermark", microsTime(st.watermark), "err", cause)
	return st, nil
}

// Encode returns the state after the last processed batch: a delta of the
// ids it added, or a full snapshot every MaxDeltaChain versions (and
// whenever the deltas since the last snapshot outgrow the live state).
func (f *fold) Encode(s *state, dst []byte) ([]byte, error) {
	kind := byte(kindDelta)
	if s.lastFull < 0 || s.version-s.lastFull >= int64(f.cfg.MaxDeltaChain) ||
		s.deltaEntries+len(s.added) > len(s.ids) {
		kind = kindFull
	}
	b := s.encode(kind, f.cfg.WatermarkDelay, dst)
	if kind == kindFull {
		s.lastFull, s.deltaEntries = s.version, 0
	} else {
		s.deltaEntries += len(s.added)
	}
	return b, nil
}

// Fold turns bronze rows into silver rows (see the package comment).
func (f *fold) Fold(ctx context.Context, s *state, b stream.Batch, meta stream.EventTimeMeta, in []arrow.RecordBatch) ([]arrow.RecordBatch, stream.ProcessStats, error) {
	var c stream.ProcessStats
	s.added = s.added[:0]
	wm := meta.WatermarkMicros()
	delay := f.cfg.WatermarkDelay
	out, err := newEditBuilder(f.alloc, meta.Planned)
	if err != nil {
		return nil, c, fmt.Errorf("silver: %w", err)
	}
	defer out.release()
	maxEvent := s.maxEvent
	var firstBad error
	for _, rec := range in {
		cols, err := bronzeColumns(rec)
		if err != nil {
			return nil, c, fmt.Errorf("silver: %w", err)
		}
		parsed, err := parseAll(ctx, cols, int(rec.NumRows()), f.cfg.MaxEventAhead)
		if err != nil {
			return nil, c, err
		}
		for i := range parsed {
			e, err := &parsed[i].e, parsed[i].err
			if errors.Is(err, errSkip) {
				c.Skipped++
				continue
			}
			if err != nil {
				c.Unparseable++
				if firstBad == nil {
					firstBad = fmt.Errorf("partition %d offset %d: %w", cols.partition(i), cols.offset(i), err)
				}
				continue
			}
			maxEvent = max(maxEvent, e.EventTime)
			if wm != noTime && e.EventTime < wm {
				c.DroppedByWatermark++
				continue
			}
			if s.live(e.Key, wm, delay) {
				c.Duplicates++
				continue
			}
			s.add(e.Key, e.EventTime)
			out.add(e, cols.partition(i), cols.offset(i))
		}
	}
	if c.Unparseable > 0 {
		f.cfg.Logger.Warn("silver: unparseable bronze rows (kept in bronze, not in silver)",
			"batch", b.ID, "count", c.Unparseable, "first", firstBad)
	}
	s.version, s.maxEvent, s.watermark = b.ID, maxEvent, wm
	s.evict(wm, delay)
	return []arrow.RecordBatch{out.build()}, c, nil
}

// parseChunk is how many rows one parsing goroutine takes at a time.
const parseChunk = 2048

type parseResult struct {
	e   edit
	err error
}

// parseAll parses the n raw events of cols on up to GOMAXPROCS goroutines
// (JSON decoding is most of silver's work); the results are in row order,
// so the dedup pass that follows is sequential and deterministic.
func parseAll(ctx context.Context, cols bronzeCols, n int, maxAhead time.Duration) ([]parseResult, error) {
	out := make([]parseResult, n)
	workers := min(runtime.GOMAXPROCS(0), (n+parseChunk-1)/parseChunk)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				lo := int(next.Add(parseChunk)) - parseChunk
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+parseChunk, n); i++ {
					out[i].e, out[i].err = parseEdit(cols.value(i), cols.received(i), maxAhead)
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// bronzeCols reads the bronze columns silver needs, by name.
type bronzeCols struct {
	part *array.Int32
	off  *array.Int64
	ts   *array.Timestamp // broker_ts (µs); nil: unknown
	str  *array.String
	bin  *array.Binary
}

func bronzeColumns(rec arrow.RecordBatch) (bronzeCols, error) {
	var c bronzeCols
	sc := rec.Schema()
	for i, f := range sc.Fields() {
		switch f.Name {
		case "broker_partition":
			c.part, _ = rec.Column(i).(*array.Int32)
		case "broker_offset":
			c.off, _ = rec.Column(i).(*array.Int64)
		case "broker_ts":
			if tt, ok := f.Type.(*arrow.TimestampType); ok && tt.Unit == arrow.Microsecond {
				c.ts, _ = rec.Column(i).(*array.Timestamp)
			}
		case "value":
			c.str, _ = rec.Column(i).(*array.String)
			c.bin, _ = rec.Column(i).(*array.Binary)
		}
	}
	if c.part == nil || c.off == nil || (c.str == nil && c.bin == nil) {
		return c, fmt.Errorf("read bronze rows: want int32 broker_partition, int64 broker_offset and string value columns, got %s", sc)
	}
	return c, nil
}

func (c bronzeCols) partition(i int) int32 { return c.part.Value(i) }
func (c bronzeCols) offset(i int) int64    { return c.off.Value(i) }

// received is when the broker received row i (zero if unknown).
func (c bronzeCols) received(i int) time.Time {
	if c.ts == nil || c.ts.IsNull(i) {
		return time.Time{}
	}
	return time.UnixMicro(int64(c.ts.Value(i)))
}

// value is row i's raw event, the record's own bytes (no copy: it was
// half of silver's allocation at 10,000 ev/s); the caller only reads it,
// while the record lives, and keeps nothing of it (ParseEdit copies what it
// returns).
func (c bronzeCols) value(i int) []byte {
	if c.str != nil {
		s := c.str.Value(i)
		return unsafe.Slice(unsafe.StringData(s), len(s))
	}
	return c.bin.Value(i)
}
