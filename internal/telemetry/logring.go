package telemetry

import (
	"context"
	"fmt"
	"lakehouse/internal/observe"
	"log/slog"
	"strings"
	"sync"
)

// LogRing keeps the newest warnings and errors logged.
type LogRing struct {
	mu      sync.Mutex
	entries []observe.LogEntry
	next    int
	full    bool
}

// NewLogRing keeps the newest n.
func NewLogRing(n int) *LogRing { return &LogRing{entries: make([]observe.LogEntry, n)} }

// Add keeps e, dropping the oldest beyond the ring's size.
func (r *LogRing) Add(e observe.LogEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries[r.next] = e
	r.next = (r.next + 1) % len(r.entries)
	r.full = r.full || r.next == 0
}

// Newest returns the kept entries, newest first.
func (r *LogRing) Newest() []observe.LogEntry {
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

// RingHandler passes every record to Next and keeps those at warning
// level or above in Ring.
type RingHandler struct {
	Next  slog.Handler
	Ring  *LogRing
	attrs []slog.Attr
	group string
}

func (h *RingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.Next.Enabled(ctx, l)
}

func (h *RingHandler) Handle(ctx context.Context, r slog.Record) error {
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
		h.Ring.Add(observe.LogEntry{Time: r.Time, Level: r.Level.String(), Msg: r.Message, Attrs: attrs})
	}
	if !h.Next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Next.Handle(ctx, r)
}

func (h *RingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &RingHandler{Next: h.Next.WithAttrs(as), Ring: h.Ring, attrs: append(append([]slog.Attr{}, h.attrs...), as...), group: h.group}
}

func (h *RingHandler) WithGroup(name string) slog.Handler {
	return &RingHandler{Next: h.Next.WithGroup(name), Ring: h.Ring, attrs: h.attrs, group: name}
}
