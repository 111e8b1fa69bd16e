package replay

// The wire: SSE ids and resume positions, and streaming the held events to
// one connection at its pace.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"
)

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
		log := r.log.view()
		return sort.Search(log.n, func(i int) bool { return log.at(i).enq >= ns }), nil
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
		log := r.log.view()
		more := r.more
		r.mu.RUnlock()
		if idx >= log.n {
			if !r.idle(ctx, c, more) {
				return
			}
			continue
		}
		for i := 0; idx < log.n; i++ {
			if i%64 == 63 && r.stopped(ctx) {
				return
			}
			e, rec := log.entry(idx)
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
			e.writeData(c.bw, r.cfg.Seed, r.cfg.Restamp || e.kind == KindLate || rec.stamp.Load() != 0, &rec.stamp, time.Now())
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
