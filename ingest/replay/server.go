package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for Config.
const (
	DefaultTopic     = "replay.mediawiki.recentchange"
	DefaultHeartbeat = 5 * time.Second
	// Path is where Start serves the stream, as EventStreams does.
	Path = "/v2/stream/recentchange"
)

// Config configures a Server. Zero fields take defaults.
type Config struct {
	// Seed makes loop ids, violations, late, canary and oversized events
	// deterministic.
	Seed int64
	// Rate paces each connection at this many events per second; 0 sends
	// flat out.
	Rate float64
	// Restamp rewrites timestamp and meta.dt of every event to the time it
	// is first sent (keeping the recorded intake delay between them). Late
	// events are always stamped send time minus their age; events Backdate
	// stamped keep that stamp.
	Restamp bool
	// IDGroup is how many consecutive events share one SSE id (stream
	// position), as timestamp-based ids do on the real stream. Default 1.
	IDGroup int
	// Rewind is how many events before the first event of the requested
	// position a resumed connection starts: "at or before" Last-Event-ID.
	Rewind int
	// ResumeAfter makes a resumed connection start right after the named
	// position (KafkaSSE with offset ids) instead of at it, so a scenario
	// can count broker messages exactly. Rewind still applies.
	ResumeAfter bool
	// Topic is named in the SSE ids. Default DefaultTopic.
	Topic string
	// Heartbeat is the interval of SSE comments on an idle connection.
	Heartbeat time.Duration
	// Logger, default slog.Default().
	Logger *slog.Logger
	// Refuse, when set, is asked about every request (attempt counts them
	// from 1): a non-zero status is replied instead of the stream, with
	// header (a 429 or 503 with Retry-After, say).
	Refuse func(attempt int64, req *http.Request) (status int, header http.Header)
}

// Counts counts what a Server holds and sent, so a scenario can
// compute its expectations. Counts of ids assume the recordings given to
// Loops are valid with unique meta.ids (Generate and Sample are).
type Counts struct {
	Events        int64 // events held (every kind)
	Loops         int   // loop passes enqueued
	OnTime        int64 // events of Loops passes: unique, valid, on time
	OnTimeEditNew int64 // ... of which type edit or new
	Resent        int64 // repeats enqueued by Resend / ResendRange
	Violations    int64 // contract violations
	Late          int64 // valid events stamped in the past (unique ids)
	LateEditNew   int64 // ... of which type edit or new
	Canaries      int64 // canary events
	Oversized     int64 // oversized events
	BadIDs        int64 // valid events sent with an SSE id that is no position
	Sent          int64 // events written to clients (all connections)
	Connections   int64 // connections accepted
}

// Event describes one held event (see Server.Events).
type Event struct {
	Index    int    // position in the replay log
	Position int64  // the stream position its SSE id names
	Kind     Kind   // why it is there
	Loop     int    // loop pass (KindLoop, and KindResend of a loop)
	MetaID   string // the meta.id it is sent with ("" if it has none)
	Type     string // recorded type field
}

// Server is an SSE server that plays events like Wikimedia EventStreams:
// "event: message", an "id:" holding a JSON array of stream positions, and
// the event JSON as data. It holds an append-only, in-memory log of events;
// every connection reads it from its resume point (at or before
// Last-Event-ID, or from `since`, or from the start) and waits for more at
// the end. Enqueue methods may be called at any time, also while serving.
type Server struct {
	cfg Config

	mu      sync.RWMutex
	entries []*entry
	more    chan struct{} // closed and replaced when entries grow
	loops   [][]*template // templates of each loop pass, for Resend
	counts  Counts
	calls   int64 // enqueue calls, for per-call seeds

	sent, conns, attempts atomic.Int64

	srv    *http.Server
	closed chan struct{}
	once   sync.Once
}

// New returns an empty replay server; enqueue events and Start it.
func New(cfg Config) *Server {
	if cfg.IDGroup <= 0 {
		cfg.IDGroup = 1
	}
	if cfg.Rewind < 0 {
		cfg.Rewind = 0
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{cfg: cfg, more: make(chan struct{}), closed: make(chan struct{})}
}

// Start serves on addr (for example "127.0.0.1:0") and returns the stream
// URL (http://host:port/v2/stream/recentchange).
func (r *Server) Start(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen replay: %w", err)
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.cfg.Logger.Error("replay: serve", "err", err)
		}
	}()
	return "http://" + ln.Addr().String() + Path, nil
}

// Close stops the server and ends every connection.
func (r *Server) Close() error {
	r.once.Do(func() { close(r.closed) })
	if r.srv != nil {
		if err := r.srv.Close(); err != nil {
			return fmt.Errorf("close replay: %w", err)
		}
	}
	return nil
}

// Counts returns what was enqueued and sent so far.
func (r *Server) Counts() Counts {
	r.mu.RLock()
	c := r.counts
	r.mu.RUnlock()
	c.Sent = r.sent.Load()
	c.Connections = r.conns.Load()
	return c
}

// Len returns the number of events held.
func (r *Server) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.entries)
}

// Events describes the held events from index from on.
func (r *Server) Events(from int) []Event {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if from < 0 {
		from = 0
	}
	out := make([]Event, 0, max(0, len(r.entries)-from))
	for i := from; i < len(r.entries); i++ {
		e := r.entries[i]
		out = append(out, Event{Index: i, Position: int64(i / r.cfg.IDGroup), Kind: e.kind,
			Loop: e.loop, MetaID: e.metaID(r.cfg.Seed), Type: e.t.typ})
	}
	return out
}

// ResumeIndex returns the index of the first event a connection resuming
// with lastEventID is sent: the first event of the named position minus
// Rewind (the first event after it with ResumeAfter). ok is false when lastEventID is not one of this server's ids.
func (r *Server) ResumeIndex(lastEventID string) (idx int, ok bool) {
	pos, ok := r.parsePosition(lastEventID)
	if !ok {
		return 0, false
	}
	if r.cfg.ResumeAfter {
		pos++
	}
	return max(0, int(pos)*r.cfg.IDGroup-r.cfg.Rewind), true
}

// GroupStart returns the index of the first event sent with the SSE id id
// (a stream position names a group of IDGroup events) and the position
// itself; ok is false when id is not one of this server's ids.
func (r *Server) GroupStart(id string) (idx int, pos int64, ok bool) {
	pos, ok = r.parsePosition(id)
	if !ok {
		return 0, 0, false
	}
	return int(pos) * r.cfg.IDGroup, pos, true
}

func (r *Server) add(es []*entry, apply func(c *Counts)) {
	now := time.Now().UnixNano()
	for _, e := range es {
		e.enq = now
	}
	r.mu.Lock()
	r.entries = append(r.entries, es...)
	r.counts.Events += int64(len(es))
	if apply != nil {
		apply(&r.counts)
	}
	close(r.more)
	r.more = make(chan struct{})
	r.mu.Unlock()
}

func (r *Server) nextSeed() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	return r.cfg.Seed*1_000_003 + r.calls
}

// Loops enqueues n passes over rec. Each pass gets fresh deterministic
// meta.ids (see LoopID; the first pass ever keeps the recorded ids); passes
// are numbered across calls.
func (r *Server) Loops(rec Recording, n int) {
	tmpls := make([]*template, len(rec.Events))
	var editNew int64
	for i, data := range rec.Events {
		tmpls[i] = newTemplate(data)
		if t := tmpls[i].typ; t == "edit" || t == "new" {
			editNew++
		}
	}
	for range n {
		r.mu.Lock()
		loop := len(r.loops)
		r.loops = append(r.loops, tmpls)
		r.mu.Unlock()
		es := make([]*entry, len(tmpls))
		for i, t := range tmpls {
			es[i] = &entry{t: t, kind: KindLoop, loop: loop}
		}
		r.add(es, func(c *Counts) {
			c.Loops++
			c.OnTime += int64(len(tmpls))
			c.OnTimeEditNew += editNew
		})
	}
}

// Resend enqueues loop pass loop again with the same meta.ids, as a source
// that resumed from an earlier position would send them.
func (r *Server) Resend(loop int) error {
	r.mu.RLock()
	if loop < 0 || loop >= len(r.loops) {
		n := len(r.loops)
		r.mu.RUnlock()
		return fmt.Errorf("resend loop %d: only %d loops enqueued", loop, n)
	}
	tmpls := r.loops[loop]
	r.mu.RUnlock()
	es := make([]*entry, len(tmpls))
	for i, t := range tmpls {
		es[i] = &entry{t: t, kind: KindResend, loop: loop}
	}
	r.add(es, func(c *Counts) { c.Resent += int64(len(es)) })
	return nil
}

// ResendRange enqueues the held events [from, to) again, same ids.
func (r *Server) ResendRange(from, to int) error {
	r.mu.RLock()
	if from < 0 || to > len(r.entries) || from > to {
		n := len(r.entries)
		r.mu.RUnlock()
		return fmt.Errorf("resend range [%d,%d): %d events held", from, to, n)
	}
	es := make([]*entry, 0, to-from)
	for _, e := range r.entries[from:to] {
		es = append(es, &entry{t: e.t, kind: KindResend, loop: e.loop, age: e.age})
	}
	r.mu.RUnlock()
	r.add(es, func(c *Counts) { c.Resent += int64(len(es)) })
	return nil
}

// Backdate stamps the events held and not yet stamped (all but late ones)
// as if they had been taken in evenly over the span before now, in log
// order: the i-th of n at now - span + span*(i+1)/n, so the last is stamped
// now. Their timestamp and meta.dt are rewritten for that stamp when sent
// (with the recorded intake delay between them, as Restamp does) and stay
// the same on a resend, so a replay of a recording covers hours of event
// time while it is sent in seconds. Event times then rise along the log
// as on the real stream, never lie ahead of the time they are sent, and
// the newest is about now: none is late for a watermark that trails the
// newest event time, and the watermark reaches now minus its delay.
func (r *Server) Backdate(span time.Duration) {
	now := time.Now().UnixNano()
	r.mu.RLock()
	defer r.mu.RUnlock()
	var todo []*entry
	for _, e := range r.entries {
		if e.kind != KindLate && e.stamp.Load() == 0 {
			todo = append(todo, e)
		}
	}
	for i, e := range todo {
		back := float64(span) * float64(len(todo)-1-i) / float64(len(todo))
		e.stamp.CompareAndSwap(0, now-int64(back))
	}
}

// Violations enqueues n events that break the contract, cycling through
// ViolationKinds (not JSON, missing meta.id, bad type, ...).
func (r *Server) Violations(n int) { r.violations(n, 0) }

// violations enqueues n violations of the kinds ViolationKinds[first+i].
func (r *Server) violations(n, first int) {
	seed := r.nextSeed()
	base := Generate(seed, n)
	es := make([]*entry, n)
	for i := range n {
		data := Violate(base.Events[i], first+i)
		es[i] = &entry{t: &template{data: data, metaID: metaIDOf(data), typ: typeOf(data)}, kind: KindViolation}
	}
	r.add(es, func(c *Counts) { c.Violations += int64(n) })
}

// Late enqueues n fresh valid events whose times are stamped age before the
// moment they are sent.
func (r *Server) Late(n int, age time.Duration) {
	rec := Generate(r.nextSeed(), n)
	es := make([]*entry, n)
	var editNew int64
	for i, data := range rec.Events {
		t := newTemplate(data)
		if t.typ == "edit" || t.typ == "new" {
			editNew++
		}
		es[i] = &entry{t: t, kind: KindLate, age: age}
	}
	r.add(es, func(c *Counts) { c.Late += int64(n); c.LateEditNew += editNew })
}

// Canaries enqueues n valid canary events (meta.domain "canary").
func (r *Server) Canaries(n int) {
	rec := Generate(r.nextSeed(), n)
	es := make([]*entry, n)
	for i, data := range rec.Events {
		m := mustDecodeObject(data)
		m["meta"].(map[string]any)["domain"] = "canary"
		es[i] = &entry{t: newTemplate(encodeCompact(m)), kind: KindCanary}
	}
	r.add(es, func(c *Counts) { c.Canaries += int64(n) })
}

// Oversized enqueues n otherwise valid events padded (in "comment") to at
// least size bytes.
func (r *Server) Oversized(n, size int) {
	rec := Generate(r.nextSeed(), n).Padded(size)
	es := make([]*entry, n)
	for i, data := range rec.Events {
		es[i] = &entry{t: newTemplate(data), kind: KindOversized}
	}
	r.add(es, func(c *Counts) { c.Oversized += int64(n) })
}

// BadIDs enqueues n fresh valid events sent with the SSE id line id instead
// of their position: a control character, a value too long to send back, or
// anything else a hostile source might name its position. Clients must keep
// their last good position.
func (r *Server) BadIDs(n int, id string) {
	rec := Generate(r.nextSeed(), n)
	es := make([]*entry, n)
	for i, data := range rec.Events {
		es[i] = &entry{t: newTemplate(data), kind: KindBadID, sseID: id}
	}
	r.add(es, func(c *Counts) { c.BadIDs += int64(n) })
}

func metaIDOf(data []byte) string { return newTemplate(data).metaID }
func typeOf(data []byte) string   { return newTemplate(data).typ }

// ID returns the SSE id this server sends for stream position pos.
func (r *Server) ID(pos int64) string { return string(r.appendID(nil, pos)) }

// appendID appends the id line value for stream position pos to b.
func (r *Server) appendID(b []byte, pos int64) []byte {
	b = append(b, `[{"topic":"`...)
	b = append(b, r.cfg.Topic...)
	b = append(b, `","partition":0,"offset":`...)
	b = strconv.AppendInt(b, pos, 10)
	return append(b, "}]"...)
}

func (r *Server) parsePosition(id string) (int64, bool) {
	var parts []struct {
		Topic     string `json:"topic"`
		Partition int    `json:"partition"`
		Offset    *int64 `json:"offset"`
	}
	if err := json.Unmarshal([]byte(id), &parts); err != nil {
		return 0, false
	}
	for _, p := range parts {
		if p.Topic == r.cfg.Topic && p.Offset != nil && *p.Offset >= 0 {
			return *p.Offset, true
		}
	}
	return 0, false
}

// startIndex picks where a new connection starts.
func (r *Server) startIndex(req *http.Request) (int, error) {
	if id := req.Header.Get("Last-Event-ID"); id != "" {
		idx, ok := r.ResumeIndex(id)
		if !ok {
			return 0, fmt.Errorf("Last-Event-ID %q names no position of topic %s", id, r.cfg.Topic)
		}
		return idx, nil
	}
	if s := req.URL.Query().Get("since"); s != "" {
		var since time.Time
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			since = time.UnixMilli(ms)
		} else if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			since = t
		} else {
			return 0, fmt.Errorf("since %q is neither milliseconds nor RFC 3339", s)
		}
		r.mu.RLock()
		defer r.mu.RUnlock()
		ns := since.UnixNano()
		return sort.Search(len(r.entries), func(i int) bool { return r.entries[i].enq >= ns }), nil
	}
	return 0, nil
}

// ServeHTTP streams events to one client.
func (r *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	if r.refused(w, req) {
		return
	}
	idx, err := r.startIndex(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.conns.Add(1)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	c := sseConn{bw: bufio.NewWriterSize(w, 64<<10), rc: http.NewResponseController(w)}
	c.bw.WriteString(":ok\n\n")
	if c.flush() != nil {
		return
	}
	r.serve(req.Context(), c, idx)
}

// refused answers req with the status Config.Refuse gives it, if any.
func (r *Server) refused(w http.ResponseWriter, req *http.Request) bool {
	if r.cfg.Refuse == nil {
		return false
	}
	status, header := r.cfg.Refuse(r.attempts.Add(1), req)
	if status == 0 {
		return false
	}
	for k, vs := range header {
		w.Header()[k] = vs
	}
	http.Error(w, http.StatusText(status), status)
	return true
}

// sseConn is one connection's buffered writer and its flush.
type sseConn struct {
	bw *bufio.Writer
	rc *http.ResponseController
}

func (c sseConn) flush() error {
	if err := c.bw.Flush(); err != nil {
		return err
	}
	return c.rc.Flush()
}

// serve sends the held events from index idx on, then waits for more
// (with heartbeats), until the client goes or the server closes.
func (r *Server) serve(ctx context.Context, c sseConn, idx int) {
	started := time.Now()
	var sentHere int64
	idBuf := make([]byte, 0, 128)
	for {
		r.mu.RLock()
		batch := r.entries[min(idx, len(r.entries)):]
		more := r.more
		r.mu.RUnlock()
		if len(batch) == 0 {
			if !r.idle(ctx, c, more) {
				return
			}
			continue
		}
		for i, e := range batch {
			if i%64 == 63 && r.stopped(ctx) {
				return
			}
			if r.cfg.Rate > 0 && !r.keepPace(ctx, c, started, sentHere) {
				return
			}
			c.bw.WriteString("event: message\nid: ")
			if e.sseID != "" {
				c.bw.WriteString(e.sseID)
			} else {
				idBuf = r.appendID(idBuf[:0], int64(idx/r.cfg.IDGroup))
				c.bw.Write(idBuf)
			}
			c.bw.WriteString("\ndata: ")
			e.writeData(c.bw, r.cfg.Seed, r.cfg.Restamp || e.kind == KindLate || e.stamp.Load() != 0, time.Now())
			if _, err := c.bw.WriteString("\n\n"); err != nil {
				return
			}
			idx++
			sentHere++
			r.sent.Add(1)
		}
		if r.isClosed() {
			c.flush()
			return
		}
	}
}

// stopped reports whether the server closed or ctx is done.
func (r *Server) stopped(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return r.isClosed()
	}
}

// isClosed reports whether Close was called.
func (r *Server) isClosed() bool {
	select {
	case <-r.closed:
		return true
	default:
		return false
	}
}

// idle flushes and waits for more events, sending a heartbeat comment
// every Heartbeat; false when the client or the server is gone.
func (r *Server) idle(ctx context.Context, c sseConn, more <-chan struct{}) bool {
	if c.flush() != nil {
		return false
	}
	hb := time.NewTimer(r.cfg.Heartbeat)
	defer hb.Stop()
	select {
	case <-more:
	case <-hb.C:
		c.bw.WriteString(":\n\n")
	case <-ctx.Done():
		return false
	case <-r.closed:
		return false
	}
	return true
}

// keepPace waits (flushed) until the next event is due at Rate; false when
// the client or the server is gone meanwhile.
func (r *Server) keepPace(ctx context.Context, c sseConn, started time.Time, sent int64) bool {
	wait := pace(started, sent, r.cfg.Rate)
	if wait <= 0 {
		return true
	}
	if c.flush() != nil {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-r.closed:
		return false
	}
}

// pace returns how long to wait before sending event number sent so that a
// connection started at start keeps to rate events/s. Waits under 2 ms are
// skipped (the schedule catches up in a burst), so high rates do not sleep
// per event.
func pace(start time.Time, sent int64, rate float64) time.Duration {
	due := start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
	if wait := time.Until(due); wait >= 2*time.Millisecond {
		return wait
	}
	return 0
}

// Demo starts a replay server on addr (use "127.0.0.1:0") that plays
// events generated from the 50 real ones at rate events/s (0 = flat out) in
// loops passes, with a few contract violations and canaries mixed in, their
// times spread over the span before now (Backdate; 0: stamped when sent).
// Point Config.URL at the returned URL; Close the Server when done.
func Demo(addr string, seed int64, events, loops int, rate float64, span time.Duration) (*Server, string, error) {
	r := New(Config{Seed: seed, Rate: rate, Restamp: true})
	r.Loops(Generate(seed, events), loops)
	r.Violations(max(1, events/500))
	r.Canaries(max(1, events/1000))
	if span > 0 {
		r.Backdate(span)
	}
	url, err := r.Start(addr)
	if err != nil {
		return nil, "", err
	}
	return r, url, nil
}
