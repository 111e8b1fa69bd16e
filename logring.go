package main

import (
	"context"
	"fmt"
	"lakehouse/internal/observe"
	"log/slog"
	"strings"
	"sync"
)

// logRing keeps the newest warnings and errors logged.
type logRing struct {
	mu      sync.Mutex
	entries []observe.LogEntry
	next    int
	full    bool
}

func newLogRing(n int) *logRing { return &logRing{entries: make([]observe.LogEntry, n)} }

func (r *logRing) add(e observe.LogEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries[r.next] = e
	r.next = (r.next + 1) % len(r.entries)
	r.full = r.full || r.next == 0
}

// newest returns the kept entries, newest first.
func (r *logRing) newest() []observe.LogEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next
	if r.full {
		n = len(r.entries)
	}
	out := make([]observe.LogEntry, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.entries[(r.next-i+len(r.entries))%len(r.entries)])
	}
	return out
}

// ringHandler passes every record to next and keeps those at warning level
// or above in ring.
type ringHandler struct {
	next  slog.Handler
	ring  *logRing
	attrs []slog.Attr
	group string
}

func (h *ringHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h *ringHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		var b strings.Builder
		add := func(a slog.Attr) {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s=%v", a.Key, a.Value)
		}
		for _, a := range h.attrs {
			add(a)
		}
		r.Attrs(func(a slog.Attr) bool { add(a); return true })
		attrs := b.String()
		if len(attrs) > 2000 {
			attrs = attrs[:2000] + "…"
		}
		h.ring.add(observe.LogEntry{Time: r.Time, Level: r.Level.String(), Msg: r.Message, Attrs: attrs})
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *ringHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &ringHandler{next: h.next.WithAttrs(as), ring: h.ring, attrs: append(append([]slog.Attr{}, h.attrs...), as...), group: h.group}
}

func (h *ringHandler) WithGroup(name string) slog.Handler {
	return &ringHandler{next: h.next.WithGroup(name), ring: h.ring, attrs: h.attrs, group: name}
}
