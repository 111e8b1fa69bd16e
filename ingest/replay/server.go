package replay

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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

	mu     sync.RWMutex
	log    entryLog
	more   chan struct{} // closed and replaced when the log grows
	loops  [][]*template // templates of each loop pass, for Resend
	counts Counts
	calls  int64 // enqueue calls, for per-call seeds

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
	return r.log.n
}

// Events describes the held events from index from on.
func (r *Server) Events(from int) []Event {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if from < 0 {
		from = 0
	}
	log := r.log.view()
	out := make([]Event, 0, max(0, log.n-from))
	for i := from; i < log.n; i++ {
		e, _ := log.entry(i)
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
