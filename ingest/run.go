package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"lakehouse/broker"
	"lakehouse/internal/fault"
	"lakehouse/internal/transient"
)

var (
	hookBeforeAppend = fault.Register("ingest.before-append",
		"ingest: a batch (events + resume position) is built, before the broker Append")
	hookAfterAppend = fault.Register("ingest.after-append",
		"ingest: the broker Append returned (batch and resume position durable), before the ingest counts it")
)

// Ingester moves one SSE source into the broker. Create it with New, start it
// with Run, read its counters with Stats from any goroutine.
type Ingester struct {
	log       broker.Log
	cfg       Config
	router    *router
	transport http.RoundTripper

	seen, appended, dlq, canary, batches, bytes, reconnects atomic.Int64
	oversized, badIDs                                       atomic.Int64
	connected                                               atomic.Bool
	position, lastError, pauseErr                           atomic.Pointer[string]
	pausedSince                                             atomic.Pointer[time.Time] // while the broker refuses appends transiently
	running                                                 atomic.Bool
	since                                                   time.Time           // the first connection's since, when no position is stored (set by Run)
	buffered                                                *semaphore.Weighted // event bytes between the stream and the broker

	logMu       sync.Mutex
	badIDLogged time.Time // when a refused id was last logged
	badIDsQuiet int64     // refused since then, not logged
}

// New checks cfg, fills its defaults and compiles the contract.
func New(log broker.Log, cfg Config) (*Ingester, error) {
	if log == nil {
		return nil, errors.New("new ingester: nil broker log")
	}
	cfg.fill()
	c, err := loadDefaultContract()
	if err != nil {
		return nil, fmt.Errorf("new ingester: %w", err)
	}
	in := &Ingester{
		log: log,
		cfg: cfg,
		router: &router{
			contract: c.WithMaxAhead(cfg.MaxEventAhead),
			topic:    cfg.Topic,
			dlqTopic: cfg.DLQTopic,
			url:      cfg.URL,
			maxBytes: cfg.MaxEventBytes,
		},
		transport: cfg.HTTPTransport,
		buffered:  semaphore.NewWeighted(int64(cfg.MaxBufferedBytes)),
	}
	empty := ""
	in.position.Store(&empty)
	in.lastError.Store(&empty)
	return in, nil
}

// refusedID counts an SSE id refused as a stream position and logs it, with
// a quoted prefix of at most 64 bytes, at most once per 10 s (saying how many
// more were refused meanwhile).
func (in *Ingester) refusedID(prefix []byte, n int, reason string) {
	in.badIDs.Add(1)
	in.logMu.Lock()
	defer in.logMu.Unlock()
	if !in.badIDLogged.IsZero() && time.Since(in.badIDLogged) < 10*time.Second {
		in.badIDsQuiet++
		return
	}
	in.cfg.Logger.Warn("ingest: SSE id refused as a stream position; the event keeps the last good one",
		"source", in.cfg.Source, "reason", reason, "id_bytes", n, "id_prefix", strconv.Quote(string(prefix[:min(len(prefix), 64)])),
		"refused_since_last_log", in.badIDsQuiet, "refused_total", in.badIDs.Load())
	in.badIDLogged, in.badIDsQuiet = time.Now(), 0
}

// setLastError records why the stream failed (nil: it is fine again).
func (in *Ingester) setLastError(err error) {
	s := errorText(err)
	in.lastError.Store(&s)
}

// Config returns the configuration with defaults filled in.
func (in *Ingester) Config() Config { return in.cfg }

// Stats returns a snapshot of the counters. Safe to call while Run runs.
func (in *Ingester) Stats() Stats {
	return Stats{
		Seen:       in.seen.Load(),
		Appended:   in.appended.Load(),
		DLQ:        in.dlq.Load(),
		Canary:     in.canary.Load(),
		Batches:    in.batches.Load(),
		Bytes:      in.bytes.Load(),
		Reconnects: in.reconnects.Load(),
		Oversized:  in.oversized.Load(),
		BadIDs:     in.badIDs.Load(),
		Position:   *in.position.Load(),
		Connected:  in.connected.Load(),
		LastError:  *in.lastError.Load(),
		Paused:     in.pauseText(),
	}
}

// pauseText says why ingest is paused ("" when it is not).
func (in *Ingester) pauseText() string {
	since := in.pausedSince.Load()
	if since == nil {
		return ""
	}
	e := ""
	if p := in.pauseErr.Load(); p != nil {
		e = *p
	}
	return fmt.Sprintf("the broker cannot write for %s: %s", time.Since(*since).Round(time.Second), e)
}

// Run ingests with a fresh Ingester: see (*Ingester).Run.
func Run(ctx context.Context, log broker.Log, cfg Config) error {
	in, err := New(log, cfg)
	if err != nil {
		return err
	}
	return in.Run(ctx)
}

// Run creates the topics if needed, reads the stored resume position and
// streams events into the broker until ctx is done. Then it appends the
// events already received (the pending batch) and returns nil.
//
// Every Append carries the batch's records and, in the same transaction,
// the SSE id of the batch's last event under MetaKey(Source): after a crash
// the stored position is never ahead of the stored events. Network failures
// are retried forever with backoff. Run returns an error only for what
// cannot heal by waiting: the broker failing (topic creation, Meta,
// Append); events already received are still appended first. A frame too
// large to read, a hostile id or a stored position that cannot be sent never
// stop Run (see ErrFrameTooLarge, Config.MaxIDBytes, ResetPosition). An Ingester runs once.
func (in *Ingester) Run(ctx context.Context) error {
	if !in.running.CompareAndSwap(false, true) {
		return errors.New("run ingest: already started")
	}
	from, ok, err := in.start(ctx)
	if err != nil || !ok {
		return err
	}
	fatal := in.pipeline(ctx, from)
	s := in.Stats()
	in.cfg.Logger.Info("ingest: stopped", "source", in.cfg.Source, "seen", s.Seen, "appended", s.Appended,
		"dlq", s.DLQ, "canary", s.Canary, "batches", s.Batches, "position", s.Position, "err", fatal)
	return fatal
}

// start creates the topics and reads the stored resume position (and the
// since of a first start). ok is false when the stored position cannot be
// sent: then start waits, disconnected, until ctx is done, for an operator
// to reset it (readiness reports the disconnection).
func (in *Ingester) start(ctx context.Context) (from string, ok bool, err error) {
	cfg := in.cfg
	if err := in.log.CreateTopic(ctx, cfg.Topic, cfg.Partitions); err != nil {
		return "", false, fmt.Errorf("create topic %s: %w", cfg.Topic, err)
	}
	if err := in.log.CreateTopic(ctx, cfg.DLQTopic, 1); err != nil {
		return "", false, fmt.Errorf("create topic %s: %w", cfg.DLQTopic, err)
	}
	from, since, err := in.resumePosition(ctx)
	if err != nil {
		return "", false, err
	}
	in.position.Store(&from)
	if since.IsZero() {
		since = cfg.Since
	}
	cfg.Logger.Info("ingest: starting", "source", cfg.Source, "url", cfg.URL, "resume_from", from,
		"since", since, "topic", cfg.Topic, "dlq", cfg.DLQTopic)
	if reason := badIDReason(from, cfg.MaxIDBytes); reason != "" {
		// Written by an earlier version: sending it fails (or is refused)
		// at every attempt.
		err := fmt.Errorf("stored resume position (%d bytes, %s) is %s: stop the appliance and run `lakehouse reset-position`: %w",
			len(from), strconv.Quote(from[:min(len(from), 64)]), reason, ErrBadPosition)
		in.setLastError(err)
		cfg.Logger.Error("ingest: not connecting", "source", cfg.Source, "err", err)
		<-ctx.Done()
		return "", false, nil
	}
	in.since = since
	return from, true, nil
}

// pipeline streams from the source, resuming after from, through the
// stages: stream -> chunker -> workers (validate) -> batcher (in order) ->
// appender. Closing each stage's input ends the next stage, so a cancelled
// ctx drains every event already received into a last Append. It returns
// the first error that stopped it (nil when ctx ended it).
func (in *Ingester) pipeline(ctx context.Context, from string) error {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var fatal error
	var fatalOnce sync.Once
	fail := func(err error) {
		fatalOnce.Do(func() { fatal = err; stop() })
	}

	workers := in.cfg.Workers
	events := make(chan received, 4096)
	ordered := make(chan *chunk, 4*workers)
	work := make(chan *chunk, 4*workers)
	batches := make(chan pending, 1)

	var wg sync.WaitGroup
	wg.Go(func() { chunkEvents(events, work, ordered, in.router.route) })
	for range workers {
		wg.Go(func() {
			for c := range work {
				for i, ev := range c.evs {
					c.out[i] = in.router.route(ev)
				}
				close(c.done)
			}
		})
	}
	wg.Go(func() { in.batch(ordered, batches) })
	appendDone := make(chan struct{})
	go func() {
		defer close(appendDone)
		in.appendAll(ctx, batches, fail)
	}()

	err := in.stream(runCtx, from, func(ev received) error {
		in.seen.Add(1)
		in.bytes.Add(int64(len(ev.data)))
		// Released once the event is appended (or skipped).
		if err := in.buffered.Acquire(runCtx, in.weight(len(ev.data))); err != nil {
			return err
		}
		select {
		case events <- ev:
			return nil
		case <-runCtx.Done():
			in.buffered.Release(in.weight(len(ev.data)))
			return runCtx.Err()
		}
	})
	if err != nil {
		fail(err)
	}
	close(events)
	wg.Wait()
	<-appendDone
	return fatal
}

// appendAll stores every batch from batches, in order. Appends outlive ctx
// so the last batch is still stored on shutdown. After a failure the
// remaining batches are dropped (their buffer released) and the failure
// goes to fail, unless the appliance was stopped while storage was paused.
func (in *Ingester) appendAll(ctx context.Context, batches <-chan pending, fail func(error)) {
	actx := context.WithoutCancel(ctx)
	failed := false
	for b := range batches {
		if failed {
			in.buffered.Release(b.weight)
			continue
		}
		if err := in.store(ctx, actx, b); err != nil {
			failed = true
			if !errors.Is(err, errStoppedWhilePaused) {
				fail(err)
			}
		}
	}
}

// chunk is a run of consecutive events validated by one worker.
type chunk struct {
	evs  []received
	out  []routed
	done chan struct{}
}

const maxChunk = 128

// chunkEvents groups whatever events are already queued (up to maxChunk)
// into one chunk: a fast stream gets large chunks, a slow one gets chunks of
// one event and no added latency. A lone event with nothing queued behind
// it is routed here rather than by a worker: at the real stream's rate
// nearly every event is one, and handing it on cost a goroutine wake-up
// (and often an OS thread's) per event for about 10 µs of work.
func chunkEvents(events <-chan received, work, ordered chan<- *chunk, route func(received) routed) {
	defer close(work)
	defer close(ordered)
	for ev := range events {
		// Sized by what is queued now: a slow stream's chunks are single
		// events, and a chunk of maxChunk for each was most of ingest's
		// garbage at the real stream's rate.
		c := &chunk{evs: make([]received, 1, min(maxChunk, 1+len(events))), done: make(chan struct{})}
		c.evs[0] = ev
	fill:
		for len(c.evs) < maxChunk {
			select {
			case ev, ok := <-events:
				if !ok {
					break fill
				}
				c.evs = append(c.evs, ev)
			default:
				break fill
			}
		}
		c.out = make([]routed, len(c.evs))
		if len(c.evs) == 1 && len(events) == 0 {
			c.out[0] = route(c.evs[0])
			close(c.done)
			ordered <- c
			continue
		}
		ordered <- c
		work <- c
	}
}

// weight is what an event counts against MaxBufferedBytes: its data, at
// least 1 and at most the whole bound (so one event always gets in).
func (in *Ingester) weight(size int) int64 {
	return min(max(int64(size), 1), int64(in.cfg.MaxBufferedBytes))
}

// batchCap is the capacity of the next batch's records: room for a quarter
// more than the last batch held, so a slow stream does not allocate
// BatchMax records a batch (at 35 ev/s a batch holds about seven).
func batchCap(last, limit int) int { return min(limit, 8+last+last/4) }

// pending is one batch on its way to the broker.
type pending struct {
	b                     broker.Batch
	events, dlq, canaries int64
	position              string
	weight                int64 // of its events against MaxBufferedBytes
	bytes                 int   // event data bytes, for BatchMaxBytes
}

// batch collects routed events in stream order and hands a batch to the
// appender when it holds BatchMax events or its first event is BatchDelay old.
func (in *Ingester) batch(ordered <-chan *chunk, out chan<- pending) {
	defer close(out)
	var p pending
	n := 0
	var timer *time.Timer
	var expired <-chan time.Time
	flush := func() {
		if timer != nil {
			timer.Stop()
			expired = nil
		}
		if n == 0 {
			return
		}
		if p.position != "" {
			p.b.Meta = []broker.Meta{{Key: MetaKey(in.cfg.Source), Value: []byte(p.position)}}
		}
		out <- p
		p = pending{b: broker.Batch{Records: make([]broker.Record, 0, batchCap(len(p.b.Records), in.cfg.BatchMax))}}
		n = 0
	}
	p.b.Records = make([]broker.Record, 0, batchCap(0, in.cfg.BatchMax))
	for {
		select {
		case c, ok := <-ordered:
			if !ok {
				flush()
				return
			}
			<-c.done
			for _, r := range c.out {
				if n == 0 {
					if timer == nil {
						timer = time.NewTimer(in.cfg.BatchDelay)
					} else {
						timer.Reset(in.cfg.BatchDelay)
					}
					expired = timer.C
				}
				n++
				p.weight += in.weight(r.size)
				p.bytes += r.size
				if r.id != "" {
					p.position = r.id
				}
				switch {
				case r.canary:
					p.canaries++
				case r.dlq:
					p.dlq++
					p.b.Records = append(p.b.Records, r.rec)
				default:
					p.events++
					p.b.Records = append(p.b.Records, r.rec)
				}
				if n >= in.cfg.BatchMax || p.bytes >= in.cfg.BatchMaxBytes {
					flush()
				}
			}
		case <-expired:
			expired = nil
			flush()
		}
	}
}

// errStoppedWhilePaused ends the appender when the ingester is stopped
// while the broker cannot write: the batches not stored are read from the
// source again on the next start (the stored position is theirs).
var errStoppedWhilePaused = errors.New("stopped while the broker could not write")

// store appends one batch, retrying it for as long as the broker's error is
// transient (a full disk, the disk reserve): meanwhile the buffer between
// the stream and the broker fills and the stream stops being read, which
// is the back-pressure on the source. Nothing is lost or duplicated: the
// batch carries its own resume position, and stopping during a pause
// leaves the stored position where the stored events end. runCtx ends the
// retries; appendCtx outlives it so that the last batch is still stored on
// shutdown.
func (in *Ingester) store(runCtx, appendCtx context.Context, p pending) error {
	defer in.buffered.Release(p.weight)
	for attempt := 1; ; attempt++ {
		err := in.append(appendCtx, p)
		if err == nil {
			in.resumed()
			return nil
		}
		if !transient.Is(err) {
			return err
		}
		wait := transient.Backoff(attempt)
		in.paused(err, attempt, wait)
		t := time.NewTimer(wait)
		select {
		case <-runCtx.Done():
			t.Stop()
			in.cfg.Logger.Warn("ingest: stopped while the broker could not write; the events not stored are read from the source again on the next start",
				"source", in.cfg.Source, "position", *in.position.Load(), "err", err)
			return errStoppedWhilePaused
		case <-t.C:
		}
	}
}

// paused records (and logs) that the broker refused a batch transiently.
func (in *Ingester) paused(err error, attempt int, wait time.Duration) {
	in.pausedSince.CompareAndSwap(nil, ptr(time.Now()))
	s := errorText(err)
	in.pauseErr.Store(&s)
	in.cfg.Logger.Warn("ingest paused: the broker cannot write; not reading the source until it can",
		"source", in.cfg.Source, "attempt", attempt, "paused_for", time.Since(*in.pausedSince.Load()).Round(time.Second),
		"retry_in", wait.Round(100*time.Millisecond), "err", err)
}

// resumed ends a pause after a stored batch.
func (in *Ingester) resumed() {
	if since := in.pausedSince.Swap(nil); since != nil {
		in.cfg.Logger.Info("ingest resumed: the broker writes again", "source", in.cfg.Source,
			"paused_for", time.Since(*since).Round(time.Second))
	}
}

func ptr[T any](v T) *T { return &v }

// append stores one batch. A batch of canaries only is not appended: the
// position it would store is not needed for correctness (re-reading canaries
// only skips them again).
func (in *Ingester) append(ctx context.Context, p pending) error {
	if len(p.b.Records) == 0 {
		in.canary.Add(p.canaries)
		return nil
	}
	fault.Hit(hookBeforeAppend)
	if _, err := in.log.Append(ctx, p.b); err != nil {
		return fmt.Errorf("append batch: %w", err)
	}
	fault.Hit(hookAfterAppend)
	if p.position != "" {
		pos := p.position
		in.position.Store(&pos)
	}
	in.appended.Add(p.events)
	in.dlq.Add(p.dlq)
	in.canary.Add(p.canaries)
	in.batches.Add(1)
	if in.cfg.Progress != nil {
		in.cfg.Progress(in.Stats())
	}
	return nil
}
