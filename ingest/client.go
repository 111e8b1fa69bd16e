package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// ErrFrameTooLarge: the source sent an SSE frame longer than the client
// reads (2 x MaxEventBytes plus 4 KiB). The frame is skipped: what was read
// of it (its data up to the limit, its id when that came first) goes to the
// DLQ with this reason, and the stream goes on.
var ErrFrameTooLarge = errors.New("ingest: SSE frame too large to read")

// DefaultRetryAfterMax caps how long a Retry-After (on 429 or 503) makes
// ingest wait before it reconnects.
const DefaultRetryAfterMax = 5 * time.Minute

// maxErrorText bounds the error text kept in Stats and logs.
const maxErrorText = 512

// stream connects to the source and calls emit for every message event until
// ctx is done (returns nil) or the stream cannot heal (returns an error). It
// reconnects with backoff on every other failure, always sending the id of
// the last event it received (or, before any, the stored position from) as
// Last-Event-ID. go-sse's own retry is off: it drops Last-Event-ID when a
// reconnect happens before the first event, which would skip to the live
// end of the stream and lose the events after the stored position.
//
// An event whose id cannot be a position (see badIDReason) keeps the last
// good one, and is counted; frameGuard drops such id lines before go-sse
// sees them, this is the second line of defence. A 429 or 503 with
// Retry-After delays the next attempt by that much (at most RetryAfterMax).
func (in *Ingester) stream(ctx context.Context, from string, emit func(received) error) error {
	lastID := from
	backoff := in.cfg.RetryInitial
	var emitErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			in.reconnects.Add(1)
		}
		got, retryAfter, err := in.connect(ctx, lastID, func(ev received) bool {
			if ev.id != "" && ev.id != lastID {
				if reason := badIDReason(ev.id, in.cfg.MaxIDBytes); reason != "" {
					in.refusedID([]byte(ev.id[:min(len(ev.id), in.cfg.MaxIDBytes)]), len(ev.id), reason)
					ev.id = lastID
				}
			}
			if e := emit(ev); e != nil {
				emitErr = e
				return false
			}
			if ev.id != "" { // an event without id keeps the last position
				lastID = ev.id
			}
			return true
		})
		in.connected.Store(false)
		if emitErr != nil {
			if ctx.Err() != nil {
				return nil
			}
			return emitErr
		}
		if ctx.Err() != nil {
			return nil
		}
		in.setLastError(err)
		if got > 0 {
			backoff = in.cfg.RetryInitial
		}
		wait := jitter(backoff)
		if retryAfter > 0 {
			wait = max(wait, min(retryAfter, in.cfg.RetryAfterMax))
		}
		in.cfg.Logger.Warn("ingest: stream interrupted, reconnecting",
			"source", in.cfg.Source, "err", errorText(err), "events", got, "retry_in", wait.Round(time.Millisecond),
			"retry_after", retryAfter, "last_event_id", lastID)
		backoff = min(time.Duration(float64(backoff)*1.5), in.cfg.RetryMax)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// jitter spreads d by +-50% so many clients do not reconnect in step.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d+1)
}

// errorText is err's text, bounded (a source's reply can be long), or "".
func errorText(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) > maxErrorText {
		s = s[:maxErrorText] + "..."
	}
	return s
}

// retryAfter reads a Retry-After header (delay-seconds or an HTTP date) as a
// wait from now; 0 when absent, unreadable or past.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}

// connect runs one SSE connection and returns how many events it delivered,
// the Retry-After of a 429 or 503 reply (0 otherwise), and why it ended.
func (in *Ingester) connect(ctx context.Context, lastID string, deliver func(received) bool) (int, time.Duration, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := in.request(cctx, lastID)
	if err != nil {
		return 0, 0, err
	}
	var lastRead atomic.Int64
	lastRead.Store(time.Now().UnixNano())
	var wait time.Duration
	limit := 2*in.cfg.MaxEventBytes + 4096 // the longest frame passed on (frameGuard cuts longer ones)
	client := &sse.Client{
		HTTPClient: &http.Client{Transport: &watchTransport{base: in.transport, lastRead: &lastRead,
			guard: func(body io.ReadCloser) io.ReadCloser {
				return guardedBody{Reader: newFrameGuard(body, limit, in.cfg.MaxIDBytes, in.refusedID), Closer: body}
			}}},
		ResponseValidator: func(r *http.Response) error {
			if r.StatusCode == http.StatusTooManyRequests || r.StatusCode == http.StatusServiceUnavailable {
				wait = retryAfter(r.Header.Get("Retry-After"), time.Now())
			}
			if err := sse.DefaultValidator(r); err != nil {
				return err
			}
			in.connected.Store(true)
			in.setLastError(nil)
			return nil
		},
		Backoff: sse.Backoff{MaxRetries: -1}, // we retry ourselves, see stream
	}
	conn := client.NewConnection(req)
	// go-sse's own limit sits above the guard's, with room for the line
	// the guard adds to a frame it cuts.
	conn.Buffer(make([]byte, min(sseReadBuffer, limit)), limit+4096)

	n := 0
	var stopped bool
	conn.SubscribeToAll(func(e sse.Event) {
		if stopped {
			return
		}
		tooLarge := e.Type == oversizedType
		if e.Type != "" && e.Type != "message" && !tooLarge {
			in.cfg.Logger.Debug("ingest: ignoring SSE event", "type", e.Type)
			return
		}
		n++
		if tooLarge {
			in.oversized.Add(1)
			in.cfg.Logger.Warn("ingest: SSE frame too large to read, skipped to the DLQ",
				"source", in.cfg.Source, "limit", limit, "kept_bytes", len(e.Data), "last_event_id", e.LastEventID)
		}
		if !deliver(received{id: e.LastEventID, data: e.Data, at: time.Now(), tooLarge: tooLarge}) {
			stopped = true
			cancel()
		}
	})
	stopWatch := in.watchIdle(cctx, &lastRead, cancel)
	defer stopWatch()
	err = conn.Connect()
	return n, wait, err
}

// request is the stream's GET: resuming after lastID, or from the since of
// a first start (as a query parameter, as EventStreams takes it).
func (in *Ingester) request(ctx context.Context, lastID string) (*http.Request, error) {
	u, err := url.Parse(in.cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("parse url: %w", err)
	}
	if lastID == "" && !in.since.IsZero() {
		q := u.Query()
		q.Set("since", strconv.FormatInt(in.since.UnixMilli(), 10))
		u.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("User-Agent", in.cfg.UserAgent)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	return req, nil
}

// watchIdle drops the connection (cancel) once nothing was read for
// IdleTimeout: a stalled stream never errors by itself. The returned
// function stops the watch.
func (in *Ingester) watchIdle(ctx context.Context, lastRead *atomic.Int64, cancel func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(min(in.cfg.IdleTimeout/4, time.Second))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if time.Since(time.Unix(0, lastRead.Load())) > in.cfg.IdleTimeout {
					in.cfg.Logger.Warn("ingest: stream idle, dropping connection", "idle_timeout", in.cfg.IdleTimeout)
					cancel()
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// sseReadBuffer is the SSE parser's initial buffer. Its free space bounds
// each read from the response body: go-sse's default (4 KiB, about three
// events) made one read syscall per three events at full speed.
const sseReadBuffer = 64 << 10

// newTransport is the HTTP transport for the stream: bounded dial and header
// waits, no overall timeout (the response is endless). It never reads proxy
// settings from the environment (library code reads no environment); pass
// Config.HTTPTransport to use a proxy.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4,
		IdleConnTimeout:       90 * time.Second,
	}
}

// watchTransport records when the response body last delivered bytes, for
// the idle watchdog.
// It also puts guard (frameGuard) between the body and the SSE parser.
type watchTransport struct {
	base     http.RoundTripper
	lastRead *atomic.Int64
	guard    func(io.ReadCloser) io.ReadCloser
}

func (t *watchTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	res.Body = &watchBody{ReadCloser: res.Body, lastRead: t.lastRead}
	if t.guard != nil {
		res.Body = t.guard(res.Body)
	}
	return res, nil
}

type guardedBody struct {
	io.Reader
	io.Closer
}

type watchBody struct {
	io.ReadCloser
	lastRead *atomic.Int64
}

func (b *watchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.lastRead.Store(time.Now().UnixNano())
	}
	return n, err
}
