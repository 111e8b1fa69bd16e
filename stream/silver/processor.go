package silver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

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

// Processor is silver's stream.StatefulProcessor and stream.MetaPlanner.
// It is used by one query runner at a time.
type Processor struct {
	cfg   Config
	store stream.StateStore // where state versions are read from (the runner's, see LoadState); may be nil
	alloc memory.Allocator
	now   func() time.Time

	st  *state
	buf []byte // SaveState's encoding buffer, reused while small (stream.KeepStateBuffer)

	lake  *table.Lake // set by NewQuery: rebuilds a lost state from silver.edits
	query string

	stats      stream.ProcessStats // of the last processed batch
	statsBatch int64               // which batch stats belongs to
}

// NewProcessor returns a silver processor. Its state versions come from the
// store the runner hands to LoadState.
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

// ensure makes the in-memory state version v, rebuilding it from the
// checkpoint if it is another version.
//
// A version the checkpoint does not have (a lost checkpoint), or holds
// corrupt (a bad file, a broken delta chain), is rebuilt from silver.edits
// when the processor knows the lake: the table is the source of truth for
// what silver holds. Without the lake a lost state starts empty (logged)
// and a corrupt one is an error naming the state directory.
func (p *Processor) ensure(ctx context.Context, v int64) error {
	if p.st != nil && p.st.version == v {
		return nil
	}
	st, err := rebuild(v, nil, p.load(), p.cfg.WatermarkDelay)
	switch {
	case errors.Is(err, stream.ErrNoEntry):
		st, err = p.lostState(ctx, v, err)
	case errors.Is(err, ErrCorruptState) && p.lake != nil:
		p.cfg.Logger.Error("SILVER DEDUP STATE CORRUPT: rebuilding it from silver.edits; the corrupt files stay for inspection",
			"version", v, "state_dir", p.stateDir(), "err", err)
		st, err = p.lostState(ctx, v, err)
	case errors.Is(err, ErrCorruptState):
		err = fmt.Errorf("%w (in %s)", err, p.stateDir())
	}
	if err != nil {
		return err
	}
	p.st = st
	return nil
}

// stateDir is where the store keeps the state versions ("" without one).
func (p *Processor) stateDir() string {
	if p.store == nil {
		return ""
	}
	return p.store.StateDir()
}

// lostState replaces state version v when the checkpoint does not have it
// (the checkpoint was lost and the query continues from the table's
// marker): rebuilt from silver.edits when the processor knows the lake,
// otherwise empty.
func (p *Processor) lostState(ctx context.Context, v int64, cause error) (*state, error) {
	if p.lake == nil {
		p.cfg.Logger.Error("SILVER DEDUP STATE LOST: starting with an empty state; resends of events already in silver will be written again",
			"version", v, "err", cause)
		return newState(v), nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RecoverTimeout)
	defer cancel()
	st, err := stateFromTable(ctx, p.lake, p.query, v, p.cfg.WatermarkDelay)
	if err != nil {
		return nil, fmt.Errorf("state version %d lost (%v): %w", v, cause, err)
	}
	p.cfg.Logger.Error("SILVER DEDUP STATE LOST: rebuilt from silver.edits",
		"version", v, "ids", len(st.ids), "watermark", microsTime(st.watermark), "err", cause)
	return st, nil
}

// PlanMeta fixes batch b's watermark: the newest event time of the batches
// before it minus WatermarkDelay, never below the previous watermark.
func (p *Processor) PlanMeta(ctx context.Context, b stream.Batch) (json.RawMessage, error) {
	if err := p.ensure(ctx, b.ID-1); err != nil {
		return nil, fmt.Errorf("plan silver batch %d: %w", b.ID, err)
	}
	raw, err := stream.PlanEventTimeMeta(p.st.watermark, p.st.maxEvent, p.cfg.WatermarkDelay, p.now())
	if err != nil {
		return nil, fmt.Errorf("plan silver batch %d: %w", b.ID, err)
	}
	return raw, nil
}

// LoadState makes the state version (the state after batch version),
// reading it, and the deltas' chain, from store when it holds another
// version (stream.StatefulProcessor).
func (p *Processor) LoadState(ctx context.Context, store stream.StateStore, version int64) error {
	p.store = store
	return p.ensure(ctx, version)
}

// SaveState returns the state after the last processed batch: a delta of
// the ids it added, or a full snapshot every MaxDeltaChain versions (and
// whenever the deltas since the last snapshot outgrow the live state). The
// returned bytes are only valid until the next SaveState call (the buffer
// is reused); the runner writes them durably before the next batch.
func (p *Processor) SaveState(context.Context) ([]byte, error) {
	s := p.st
	if s == nil {
		return nil, errors.New("save silver state: nothing processed")
	}
	kind := byte(kindDelta)
	if s.lastFull < 0 || s.version-s.lastFull >= int64(p.cfg.MaxDeltaChain) ||
		s.deltaEntries+len(s.added) > len(s.ids) {
		kind = kindFull
	}
	b := s.encode(kind, p.cfg.WatermarkDelay, p.buf)
	p.buf = stream.KeepStateBuffer(b)
	if kind == kindFull {
		s.lastFull, s.deltaEntries = s.version, 0
	} else {
		s.deltaEntries += len(s.added)
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

// LiveIDs returns the number of ids in the dedup state (including expired
// ones not yet swept).
func (p *Processor) LiveIDs() int {
	if p.st == nil {
		return 0
	}
	return len(p.st.ids)
}

// Process turns bronze rows into silver rows (see the package comment).
func (p *Processor) Process(ctx context.Context, b stream.Batch, in []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	defer func() {
		for _, r := range in {
			r.Release()
		}
	}()
	meta, err := ParseMeta(b.Meta)
	if err != nil {
		return nil, fmt.Errorf("process silver batch %d: %w", b.ID, err)
	}
	if p.st == nil || p.st.version != b.ID-1 {
		if err := p.ensure(ctx, b.ID-1); err != nil {
			return nil, fmt.Errorf("process silver batch %d: %w", b.ID, err)
		}
	}
	s := p.st
	s.added = s.added[:0]
	done := false
	defer func() {
		if !done {
			p.st = nil // partly applied: rebuild from the checkpoint next time
		}
	}()
	wm := meta.WatermarkMicros()
	delay := p.cfg.WatermarkDelay

	out, err := newEditBuilder(p.alloc, meta.Planned)
	if err != nil {
		return nil, fmt.Errorf("process silver batch %d: %w", b.ID, err)
	}
	defer out.release()
	c := stream.ProcessStats{Watermark: meta.Watermark}
	maxEvent := s.maxEvent
	var firstBad error
	for _, rec := range in {
		cols, err := bronzeColumns(rec)
		if err != nil {
			return nil, fmt.Errorf("process silver batch %d: %w", b.ID, err)
		}
		parsed, err := parseAll(ctx, cols, int(rec.NumRows()), p.cfg.MaxEventAhead)
		if err != nil {
			return nil, err
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
		p.cfg.Logger.Warn("silver: unparseable bronze rows (kept in bronze, not in silver)",
			"batch", b.ID, "count", c.Unparseable, "first", firstBad)
	}
	s.version, s.maxEvent, s.watermark = b.ID, maxEvent, wm
	s.evict(wm, delay)

	p.stats, p.statsBatch = c, b.ID
	done = true
	return []arrow.RecordBatch{out.build()}, nil
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
func (c bronzeCols) value(i int) []byte {
	if c.str != nil {
		return []byte(c.str.Value(i))
	}
	return c.bin.Value(i)
}
