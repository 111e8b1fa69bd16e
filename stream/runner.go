package stream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/internal/fault"
	"lakehouse/internal/transient"
)

// Fault hooks of the batch protocol (the table adds table.after-data-files
// and table.after-commit inside the sink's commit).
var (
	hookAfterOffsetEntry = fault.Register("stream.after-offset-entry",
		"batch N's offset entry is durable, batch N has not run")
	hookAfterStateSave = fault.Register("stream.after-state-save",
		"state/<N> is durable, the sink has not committed batch N")
	hookAfterCommitEntry = fault.Register("stream.after-commit-entry",
		"batch N's commit entry is durable, batch N+1 is not planned")
)

// Query runs one streaming query: it owns the checkpoint and drives Source,
// Processor and Sink through the batch protocol (see the package comment).
type Query struct {
	cfg      Config
	src      Source
	proc     Processor
	sink     Sink
	progress ProgressSink
	cp       *Checkpoint

	mu   sync.Mutex
	last Progress
	runs int64 // batches run by this Query

	queryID     string
	idChanges   int64
	previousID  string
	unflushed   []Progress
	lastFlushed time.Time

	pause *Pause // while paused on a transient error (under mu)

	pre    *prefetch // reading the batch after the current one
	ready  *prefetch // the planned batch's input, already read
	capped bool      // the last planned batch hit a cap (or left input behind)
	// unfenced: the next planned batch starts fresh, not where the sink's
	// last batch ended (a lost checkpoint, StartFresh): Batch.Unfenced.
	unfenced bool
	// intakeBuf holds the batch's Config.IntakeColumn values, reused.
	intakeBuf []int64
}

// New builds a query. proc may be nil (input goes to the sink unchanged);
// progress may be nil (progress is then only logged and kept in the commit
// log).
func New(cfg Config, src Source, proc Processor, sink Sink, progress ProgressSink) (*Query, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if src == nil || sink == nil {
		return nil, errors.New("new query: source and sink are required")
	}
	cp, err := OpenCheckpoint(cfg.CheckpointDir)
	if err != nil {
		return nil, fmt.Errorf("new query %s: %w", cfg.Name, err)
	}
	return &Query{cfg: cfg, src: src, proc: proc, sink: sink, progress: progress, cp: cp, lastFlushed: time.Now()}, nil
}

// Config returns the query's configuration with defaults filled in.
func (q *Query) Config() Config { return q.cfg }

// Last returns the progress of the last batch this Query ran and how many
// batches it ran.
func (q *Query) Last() (Progress, int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.last, q.runs
}

// QueryID returns the query id in use (empty before Run recovered).
func (q *Query) QueryID() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queryID
}

// IDChange reports whether this run detected a query-id change at start
// (1) or not (0), and the previous id the table's marker carried. The lead's
// HTTP surface can alert on it before the first batch runs.
func (q *Query) IDChange() (int64, string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.idChanges, q.previousID
}

// Run recovers the query's position and runs batches until ctx is done. It
// returns nil when ctx ends, after finishing or abandoning the current batch
// (an abandoned batch re-runs with the same id and range on the next Run).
// A transient error (storage full or unreachable, see package transient)
// pauses the query: it waits with backoff, then recovers from its durable
// position and goes on, as after a restart (Paused says so meanwhile). Any
// other error stops the query; the checkpoint stays consistent. An error
// wrapping ErrSourceBehind (the checkpoint's position is gone from the
// source) or ErrCorruptCheckpoint says how to recover.
func (q *Query) Run(ctx context.Context) error {
	err := q.run(ctx)
	for ctx.Err() == nil && transient.Is(err) && q.paused(ctx, err) {
		err = q.run(ctx)
	}
	switch {
	case errors.Is(err, ErrCorruptCheckpoint) && q.cfg.OnCheckpointLoss == RebuildFromTable:
		err = fmt.Errorf("%w; to recover, stop the appliance and move the query's checkpoint %s away: the query then continues from its table's marker, with no duplicates (--checkpoint-loss rebuild)", err, q.cp.Dir)
	case errors.Is(err, ErrSourceBehind):
		// The checkpoint's position is gone from the source: snapshot
		// expiry or broker retention keeps what the table's marker has
		// not consumed, and a checkpoint behind the marker (a fresh
		// start re-reading from the earliest offsets) is not protected.
		err = fmt.Errorf("%w; the query's checkpoint %s records a position the source no longer holds (expiry or retention removed it after the checkpoint was written): to recover, stop the appliance and move that checkpoint away, then start with --checkpoint-loss rebuild: the query continues from its table's marker, which expiry and retention keep, with no duplicates (--checkpoint-loss fresh would re-read from the oldest data the source holds, and may meet this again while expiry runs)", err, q.cp.Dir)
	}
	if ctx.Err() != nil {
		// Best effort: progress rows are durable in the commit log anyway.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = q.flushProgress(fctx, true)
		return nil
	}
	return err
}

// Drain runs batches until the source has nothing beyond the query's
// position, then returns. Used by tests and one-shot commands.
func (q *Query) Drain(ctx context.Context) error {
	defer q.dropPrefetch()
	next, err := q.resume(ctx)
	if err != nil {
		return err
	}
	for {
		if err := q.flushProgress(ctx, false); err != nil {
			return err
		}
		e, ok, err := q.plan(ctx, next)
		if err != nil {
			return err
		}
		if !ok {
			return q.flushProgress(ctx, true)
		}
		if err := q.runBatch(ctx, e, false); err != nil {
			return err
		}
		next = e
	}
}

func (q *Query) run(ctx context.Context) error {
	defer q.dropPrefetch()
	next, err := q.resume(ctx)
	if err != nil {
		return err
	}
	var lastStart time.Time // the first batch starts at once
	woke := false           // the source's Wait returned since the last plan
	for {
		if err := q.flushProgress(ctx, false); err != nil {
			q.cfg.Logger.Warn("stream progress flush failed", "query", q.cfg.Name, "err", err)
		}
		// A batch that hit the cap left a backlog: the next one starts now.
		if q.cfg.Trigger > 0 && !q.capped {
			if d := time.Until(lastStart.Add(q.cfg.Trigger)); d > 0 {
				if err := sleep(ctx, d); err != nil {
					return err
				}
			}
		}
		started := time.Now()
		e, ok, err := q.plan(ctx, next)
		if err != nil {
			return err
		}
		if !ok {
			// Only a batch that runs starts a trigger interval, so input
			// that lands while the query waits for it starts a batch at
			// once when the last batch began a trigger or more ago. A
			// source whose Wait returned without input is paced by the
			// trigger instead, so it cannot make the query spin.
			if woke {
				lastStart = started
			}
			q.resumed()
			wctx, cancel := context.WithTimeout(ctx, q.cfg.ProgressInterval)
			err := q.src.Wait(wctx, next.End)
			cancel()
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("wait for input: %w", err)
			}
			woke = err == nil
			continue
		}
		woke = false
		lastStart = started
		if err := q.runBatch(ctx, e, false); err != nil {
			return err
		}
		q.resumed()
		next = e
	}
}

// plan writes the offset entry of the batch after prev, or returns false if
// the source has nothing new.
func (q *Query) plan(ctx context.Context, prev OffsetEntry) (OffsetEntry, bool, error) {
	var end Offset
	var n int64
	if pf := q.takePrefetch(prev.End); pf != nil {
		end, n, q.ready = pf.end, pf.n, pf
	} else {
		var err error
		end, n, err = q.src.Plan(ctx, prev.End, q.limit())
		if err != nil {
			return OffsetEntry{}, false, fmt.Errorf("plan batch %d: %w", prev.Batch+1, err)
		}
		if n == 0 {
			return OffsetEntry{}, false, nil
		}
	}
	// A batch that hit the offset cap leaves a backlog; so does one that hit
	// the byte cap, or that a source ended early at a unit boundary (a
	// table source takes whole snapshots), while more was there. Either way
	// the next batch starts at once.
	q.capped = n >= q.cfg.MaxOffsetsPerTrigger
	if !q.capped && q.cfg.Trigger > 0 {
		if lag, err := q.src.Lag(ctx, end); err == nil && lag > 0 {
			q.capped = true
		}
	}
	e := OffsetEntry{Batch: prev.Batch + 1, QueryID: q.QueryID(), Start: prev.End, End: end, Planned: time.Now().UTC(), Unfenced: q.unfenced}
	if sp, ok := q.proc.(StatefulProcessor); ok {
		// The batch's metadata (its watermark) comes from the state before it.
		if err := sp.LoadState(ctx, q.cp, prev.Batch); err != nil {
			return OffsetEntry{}, false, fmt.Errorf("plan batch %d: load state: %w", e.Batch, err)
		}
	}
	if mp, ok := q.proc.(MetaPlanner); ok {
		meta, err := mp.PlanMeta(ctx, q.batchOf(e))
		if err != nil {
			return OffsetEntry{}, false, fmt.Errorf("plan batch %d metadata: %w", e.Batch, err)
		}
		e.Meta = meta
	}
	if err := q.cp.WriteOffsets(e); err != nil {
		return OffsetEntry{}, false, fmt.Errorf("plan batch %d: %w", e.Batch, err)
	}
	q.unfenced = false
	fault.Hit(hookAfterOffsetEntry)
	return e, true, nil
}

// limit is the cap of one batch.
func (q *Query) limit() Limit {
	return Limit{Units: q.cfg.MaxOffsetsPerTrigger, Bytes: q.cfg.MaxBytesPerTrigger}
}

func (q *Query) batchOf(e OffsetEntry) Batch {
	return Batch{Query: q.cfg.Name, QueryID: q.QueryID(), ID: e.Batch, Start: e.Start, End: e.End, Meta: e.Meta, Unfenced: e.Unfenced}
}

// runBatch runs a planned batch: read, process, save state, sink commit,
// commit entry.
func (q *Query) runBatch(ctx context.Context, e OffsetEntry, replay bool) error {
	b := q.batchOf(e)
	p := Progress{Query: b.Query, QueryID: b.QueryID, Batch: b.ID, Start: b.Start, End: b.End,
		Replayed: replay, Started: time.Now().UTC()}
	q.mu.Lock()
	p.QueryIDChanges, p.PreviousQueryID = q.idChanges, q.previousID
	q.mu.Unlock()
	t0 := time.Now()

	in, err := q.readBatch(ctx, b, &p)
	if err != nil {
		return err
	}
	// The processor takes over in: the intake times are read before it.
	var intake []int64
	if q.cfg.IntakeColumn != "" {
		q.intakeBuf = timesOf(in, q.cfg.IntakeColumn, q.intakeBuf[:0])
		intake = q.intakeBuf
	}
	t1 := time.Now()
	rows, err := q.processBatch(ctx, b, in, &p)
	if err != nil {
		return err
	}
	defer release(rows)
	p.RowsOut = countRows(rows)
	p.Process = time.Since(t1)

	if q.capped && !replay {
		q.startPrefetch(ctx, b.End)
	}
	t2 := time.Now()
	res, err := q.sink.Commit(ctx, b, rows)
	if err != nil {
		return fmt.Errorf("commit batch %d: %w", b.ID, err)
	}
	p.Commit = time.Since(t2)
	p.Committed, p.SnapshotID = res.Committed, res.SnapshotID
	p.Newest, p.Latency = res.Newest, res.Latency
	if res.Committed {
		p.Intake = agesAt(intake, time.Now())
	}
	if lag, err := q.src.Lag(ctx, b.End); err == nil {
		p.Lag = lag
	}
	p.Total = time.Since(t0)

	if err := q.cp.WriteCommit(CommitEntry{Batch: b.ID, QueryID: b.QueryID, Progress: p}); err != nil {
		return fmt.Errorf("commit batch %d: %w", b.ID, err)
	}
	fault.Hit(hookAfterCommitEntry)
	q.purgeCheckpoint(b)
	q.record(p)
	return nil
}

// readBatch returns the input of b: what the prefetch read, when it read
// exactly b's range, else read now. It fills p's input counts.
func (q *Query) readBatch(ctx context.Context, b Batch, p *Progress) ([]arrow.RecordBatch, error) {
	t0 := time.Now()
	var in []arrow.RecordBatch
	var size int64
	if pf := q.ready; pf != nil && pf.start == b.Start && pf.end == b.End {
		in, size, p.Read = pf.recs, pf.size, pf.read
		q.ready = nil
	} else {
		q.dropPrefetch()
		var err error
		in, size, err = q.src.Read(ctx, b.Start, b.End)
		if err != nil {
			return nil, fmt.Errorf("read batch %d: %w", b.ID, err)
		}
		p.Read = time.Since(t0)
	}
	p.RowsIn, p.Bytes = countRows(in), size
	return in, nil
}

// processBatch runs the processor (if any) on in, a stateful one between
// loading state version b.ID-1 and durably saving version b.ID. It takes
// over in (released here or by the processor) and returns the rows to
// commit.
func (q *Query) processBatch(ctx context.Context, b Batch, in []arrow.RecordBatch, p *Progress) ([]arrow.RecordBatch, error) {
	if q.proc == nil {
		return in, nil
	}
	sp, stateful := q.proc.(StatefulProcessor)
	if stateful {
		if err := sp.LoadState(ctx, q.cp, b.ID-1); err != nil {
			release(in)
			return nil, fmt.Errorf("run batch %d: load state: %w", b.ID, err)
		}
	}
	rows, err := q.proc.Process(ctx, b, in)
	if err != nil {
		return nil, fmt.Errorf("process batch %d: %w", b.ID, err)
	}
	if sr, ok := q.proc.(StatsReporter); ok {
		p.Stats = sr.BatchStats()
	}
	if !stateful {
		return rows, nil
	}
	data, err := sp.SaveState(ctx)
	if err != nil {
		release(rows)
		return nil, fmt.Errorf("run batch %d: snapshot state: %w", b.ID, err)
	}
	if err := q.cp.SaveState(b.ID, data); err != nil {
		release(rows)
		return nil, fmt.Errorf("run batch %d: %w", b.ID, err)
	}
	fault.Hit(hookAfterStateSave)
	return rows, nil
}

// purgeCheckpoint drops the checkpoint's entries RetainBatches behind b
// (every tenth batch), keeping every commit entry whose progress row is not
// yet in ops.stream_progress: after a crash it is re-sent from the log. A
// failed purge is logged; the next one retries.
func (q *Query) purgeCheckpoint(b Batch) {
	keep := b.ID - int64(q.cfg.RetainBatches) + 1
	if keep <= 0 || b.ID%10 != 0 {
		return
	}
	q.mu.Lock()
	if len(q.unflushed) > 0 && q.unflushed[0].Batch < keep {
		keep = q.unflushed[0].Batch
	}
	q.mu.Unlock()
	if err := q.cp.Purge(keep); err != nil {
		q.cfg.Logger.Warn("stream checkpoint purge failed", "query", b.Query, "err", err)
	}
}

// record logs a finished batch's progress and keeps it for Last, the
// progress sink and OnBatch.
func (q *Query) record(p Progress) {
	p.log(q.cfg.Logger)
	q.mu.Lock()
	q.last = p
	q.runs++
	q.unflushed = append(q.unflushed, p)
	q.mu.Unlock()
	if q.cfg.OnBatch != nil {
		q.cfg.OnBatch(p)
	}
}

// flushProgress writes gathered progress rows when enough have gathered, or
// when force is set.
func (q *Query) flushProgress(ctx context.Context, force bool) error {
	if q.progress == nil {
		q.mu.Lock()
		q.unflushed = nil
		q.mu.Unlock()
		return nil
	}
	q.mu.Lock()
	rows := q.unflushed
	due := len(rows) > 0 && (force || len(rows) >= q.cfg.ProgressEvery ||
		time.Since(q.lastFlushed) >= q.cfg.ProgressInterval)
	q.mu.Unlock()
	if !due {
		return nil
	}
	if err := q.progress.WriteProgress(ctx, q.cfg.Name, rows); err != nil {
		return fmt.Errorf("write progress: %w", err)
	}
	q.mu.Lock()
	q.unflushed = q.unflushed[len(rows):]
	q.lastFlushed = time.Now()
	q.mu.Unlock()
	return nil
}

// reflushFromLog re-queues the progress rows of committed batches that
// ops.stream_progress does not have yet (a crash between the commit entry
// and the progress flush); they are flushed with the next rows.
func (q *Query) reflushFromLog(ctx context.Context) error {
	if q.progress == nil {
		return nil
	}
	last, ok, err := q.progress.LastProgress(ctx, q.cfg.Name)
	if err != nil {
		return err
	}
	if !ok {
		last = -1
	}
	entries, err := q.cp.CommitsAfter(last)
	if err != nil {
		return err
	}
	q.mu.Lock()
	for _, e := range entries {
		q.unflushed = append(q.unflushed, e.Progress)
	}
	q.mu.Unlock()
	return q.flushProgress(ctx, false)
}

func countRows(recs []arrow.RecordBatch) int64 {
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	return n
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func newQueryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
