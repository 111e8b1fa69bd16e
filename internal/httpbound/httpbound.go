// Package httpbound bounds an HTTP server in time and in connections, so
// clients cannot hold a process's file descriptors: every connection has
// timeouts, and their number is capped by a listener that, at the cap,
// closes the connection idle longest (or refuses the new one when every
// connection has a request in flight).
//
// What survives a crash: nothing; connections end with the process.
package httpbound

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Bounds are an HTTP surface's bounds. Every connection is bounded in
// time (the timeouts below) and their number is capped (Limiter), so
// clients cannot hold the process's file descriptors: the streams, the
// broker and the catalog keep the rest of its budget.
type Bounds struct {
	ReadHeader time.Duration // from accept (or the end of the previous request) to the end of the headers
	Read       time.Duration // a whole request, body included
	Write      time.Duration // a response (pprof's CPU profile runs 30 s)
	Idle       time.Duration // a keep-alive connection between requests
	MaxConns   int           // open connections at most (0: DefaultMaxConns of the descriptor limit)
}

// Defaults are the timeouts a zero field of Bounds takes.
var Defaults = Bounds{ReadHeader: 5 * time.Second, Read: 30 * time.Second, Write: 2 * time.Minute, Idle: time.Minute}

// WithDefaults fills the zero fields of b.
func (b Bounds) WithDefaults() Bounds {
	d := Defaults
	for _, f := range []struct{ v, def *time.Duration }{{&b.ReadHeader, &d.ReadHeader}, {&b.Read, &d.Read}, {&b.Write, &d.Write}, {&b.Idle, &d.Idle}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if b.MaxConns <= 0 {
		b.MaxConns = DefaultMaxConns(NofileLimit())
	}
	return b
}

// Server serves h on the returned Limiter (ln, capped at b.MaxConns)
// within b: the timeouts, the header size (b's zero fields take the
// defaults). Serve it with srv.Serve(lim).
func Server(h http.Handler, ln net.Listener, b Bounds) (*http.Server, *Limiter) {
	b = b.WithDefaults()
	lim := NewLimiter(ln, b.MaxConns)
	return &http.Server{Handler: h, ReadHeaderTimeout: b.ReadHeader, ReadTimeout: b.Read, WriteTimeout: b.Write,
		IdleTimeout: b.Idle, MaxHeaderBytes: 64 << 10, ConnState: lim.Track}, lim
}

// DefaultMaxConns is the connection cap for a process allowed nofile open
// descriptors: a quarter of them, at most 512 and at least 16; the rest
// are the appliance's own (Go raises the soft limit to the hard one at
// start, so nofile is the hard limit unless a parent lowered it).
func DefaultMaxConns(nofile uint64) int {
	return int(max(16, min(512, nofile/4)))
}

// NofileLimit is the process's limit on open descriptors (1024 when it
// cannot be read).
func NofileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 {
		return 1024
	}
	return r.Cur
}

// Limiter caps a listener's open connections at max. At the cap, a new
// connection closes the connection that has waited longest without a
// request in flight (idle between requests, or accepted and not yet sent
// its request); when every connection has a request in flight (each
// bounded by the server's timeouts), the new one is closed at once. So
// idle clients never lock out a new one (/healthz stays served), and the
// server never holds more than max descriptors.
type Limiter struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connState

	// Evicted counts idle connections closed to make room, Refused new
	// ones closed at once (every open one busy), Peak the most open at once.
	Evicted, Refused, Peak atomic.Int64
}

type connState struct {
	busy  bool      // a request in flight
	since time.Time // when it last became idle (or was accepted)
}

// NewLimiter caps ln at max open connections.
func NewLimiter(ln net.Listener, max int) *Limiter {
	return &Limiter{Listener: ln, max: max, conns: map[net.Conn]*connState{}}
}

// Accept returns the next connection, making room for it.
func (l *Limiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if len(l.conns) >= l.max {
			var victim net.Conn
			var oldest time.Time
			for vc, st := range l.conns {
				if !st.busy && (victim == nil || st.since.Before(oldest)) {
					victim, oldest = vc, st.since
				}
			}
			if victim == nil {
				l.mu.Unlock()
				l.Refused.Add(1)
				_ = c.Close()
				continue
			}
			delete(l.conns, victim)
			_ = victim.Close()
			l.Evicted.Add(1)
		}
		l.conns[c] = &connState{since: time.Now()}
		if n := int64(len(l.conns)); n > l.Peak.Load() {
			l.Peak.Store(n)
		}
		l.mu.Unlock()
		return c, nil
	}
}

// Track is the server's ConnState hook.
func (l *Limiter) Track(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, ok := l.conns[c]
	if !ok {
		return
	}
	switch s {
	case http.StateActive:
		st.busy = true
	case http.StateIdle:
		st.busy, st.since = false, time.Now()
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	}
}

// Open is how many connections are open.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
