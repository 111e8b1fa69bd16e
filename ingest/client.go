package ingest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// ErrFrameTooLarge: the source sent an SSE frame longer than the client
// reads (2 x MaxEventBytes). Reconnecting would read the same frame again, so
// Run stops with this error instead of looping.
var ErrFrameTooLarge = errors.New("ingest: SSE frame too large to read")

// stream connects to the source and calls emit for every message event until
// ctx is done (returns nil) or the stream cannot heal (returns an error). It
// reconnects with backoff on every other failure, always sending the id of
// the last event it received (or, before any, the stored position from) as
// Last-Event-ID. go-sse's own retry is off: it drops Last-Event-ID when a
// reconnect happens before the first event, which would skip to the live
// end of the stream and lose the events after the stored position.
func (in *Ingester) stream(ctx context.Context, from string, emit func(received) error) error {
	lastID := from
	backoff := in.cfg.RetryInitial
	var emitErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			in.reconnects.Add(1)
		}
		got, err := in.connect(ctx, lastID, func(ev received) bool {
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
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("read stream after %q: %w", lastID, ErrFrameTooLarge)
		}
		if got > 0 {
			backoff = in.cfg.RetryInitial
		}
		wait := jitter(backoff)
		in.cfg.Logger.Warn("ingest: stream interrupted, reconnecting",
			"source", in.cfg.Source, "err", err, "events", got, "retry_in", wait.Round(time.Millisecond), "last_event_id", lastID)
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

// connect runs one SSE connection and returns how many events it delivered
// and why it ended.
func (in *Ingester) connect(ctx context.Context, lastID string, deliver func(received) bool) (int, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()

	u, err := url.Parse(in.cfg.URL)
	if err != nil {
		return 0, fmt.Errorf("parse url: %w", err)
	}
	if lastID == "" && !in.cfg.Since.IsZero() {
		q := u.Query()
		q.Set("since", strconv.FormatInt(in.cfg.Since.UnixMilli(), 10))
		u.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("User-Agent", in.cfg.UserAgent)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}

	var lastRead atomic.Int64
	lastRead.Store(time.Now().UnixNano())
	client := &sse.Client{
		HTTPClient: &http.Client{Transport: &watchTransport{base: in.transport, lastRead: &lastRead}},
		ResponseValidator: func(r *http.Response) error {
			if err := sse.DefaultValidator(r); err != nil {
				return err
			}
			in.connected.Store(true)
			return nil
		},
		Backoff: sse.Backoff{MaxRetries: -1}, // we retry ourselves, see stream
	}
	conn := client.NewConnection(req)
	limit := 2*in.cfg.MaxEventBytes + 4096 // the longest frame read (a larger buffer would raise it)
	conn.Buffer(make([]byte, min(sseReadBuffer, limit)), limit)

	n := 0
	var stopped bool
	conn.SubscribeToAll(func(e sse.Event) {
		if stopped {
			return
		}
		if e.Type != "" && e.Type != "message" {
			in.cfg.Logger.Debug("ingest: ignoring SSE event", "type", e.Type)
			return
		}
		n++
		if !deliver(received{id: e.LastEventID, data: e.Data, at: time.Now()}) {
			stopped = true
			cancel()
		}
	})

	// Watchdog: a stalled stream never errors by itself.
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(min(in.cfg.IdleTimeout/4, time.Second))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-cctx.Done():
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

	err = conn.Connect()
	return n, err
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
type watchTransport struct {
	base     http.RoundTripper
	lastRead *atomic.Int64
}

func (t *watchTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	res.Body = &watchBody{ReadCloser: res.Body, lastRead: t.lastRead}
	return res, nil
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
