package replay

// The scenario: what a test enqueues for the server to play (loops of a
// recording, resends, violations, late, canary, oversized and bad-id events).

import (
	"fmt"
	"time"
)

func (r *Server) add(es []entry, apply func(c *Counts)) {
	now := time.Now().UnixNano()
	r.mu.Lock()
	r.log.append(es, now)
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
		es := make([]entry, len(tmpls))
		for i, t := range tmpls {
			es[i] = entry{t: t, kind: KindLoop, loop: loop}
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
	es := make([]entry, len(tmpls))
	for i, t := range tmpls {
		es[i] = entry{t: t, kind: KindResend, loop: loop}
	}
	r.add(es, func(c *Counts) { c.Resent += int64(len(es)) })
	return nil
}

// ResendRange enqueues the held events [from, to) again, same ids.
func (r *Server) ResendRange(from, to int) error {
	r.mu.RLock()
	if from < 0 || to > r.log.n || from > to {
		n := r.log.n
		r.mu.RUnlock()
		return fmt.Errorf("resend range [%d,%d): %d events held", from, to, n)
	}
	log := r.log.view()
	es := make([]entry, 0, to-from)
	for i := from; i < to; i++ {
		e, _ := log.entry(i)
		es = append(es, entry{t: e.t, kind: KindResend, loop: e.loop, age: e.age})
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
	log := r.log.view()
	var todo []*record
	for i := range log.n {
		if rec := log.at(i); Kind(rec.kind) != KindLate && rec.stamp.Load() == 0 {
			todo = append(todo, rec)
		}
	}
	for i, rec := range todo {
		back := float64(span) * float64(len(todo)-1-i) / float64(len(todo))
		rec.stamp.CompareAndSwap(0, now-int64(back))
	}
}

// Violations enqueues n events that break the contract, cycling through
// ViolationKinds (not JSON, missing meta.id, bad type, ...).
func (r *Server) Violations(n int) { r.violations(n, 0) }

// violations enqueues n violations of the kinds ViolationKinds[first+i].
func (r *Server) violations(n, first int) {
	seed := r.nextSeed()
	base := Generate(seed, n)
	es := make([]entry, n)
	for i := range n {
		data := Violate(base.Events[i], first+i)
		es[i] = entry{t: &template{data: data, metaID: metaIDOf(data), typ: typeOf(data)}, kind: KindViolation}
	}
	r.add(es, func(c *Counts) { c.Violations += int64(n) })
}

// Late enqueues n fresh valid events whose times are stamped age before the
// moment they are sent.
func (r *Server) Late(n int, age time.Duration) {
	rec := Generate(r.nextSeed(), n)
	es := make([]entry, n)
	var editNew int64
	for i, data := range rec.Events {
		t := newTemplate(data)
		if t.typ == "edit" || t.typ == "new" {
			editNew++
		}
		es[i] = entry{t: t, kind: KindLate, age: age}
	}
	r.add(es, func(c *Counts) { c.Late += int64(n); c.LateEditNew += editNew })
}

// Canaries enqueues n valid canary events (meta.domain "canary").
func (r *Server) Canaries(n int) {
	rec := Generate(r.nextSeed(), n)
	es := make([]entry, n)
	for i, data := range rec.Events {
		m := mustDecodeObject(data)
		m["meta"].(map[string]any)["domain"] = "canary"
		es[i] = entry{t: newTemplate(encodeCompact(m)), kind: KindCanary}
	}
	r.add(es, func(c *Counts) { c.Canaries += int64(n) })
}

// Oversized enqueues n otherwise valid events padded (in "comment") to at
// least size bytes.
func (r *Server) Oversized(n, size int) {
	rec := Generate(r.nextSeed(), n).Padded(size)
	es := make([]entry, n)
	for i, data := range rec.Events {
		es[i] = entry{t: newTemplate(data), kind: KindOversized}
	}
	r.add(es, func(c *Counts) { c.Oversized += int64(n) })
}

// BadIDs enqueues n fresh valid events sent with the SSE id line id instead
// of their position: a control character, a value too long to send back, or
// anything else a hostile source might name its position. Clients must keep
// their last good position.
func (r *Server) BadIDs(n int, id string) {
	rec := Generate(r.nextSeed(), n)
	es := make([]entry, n)
	for i, data := range rec.Events {
		es[i] = entry{t: newTemplate(data), kind: KindBadID, sseID: id}
	}
	r.add(es, func(c *Counts) { c.BadIDs += int64(n) })
}

func metaIDOf(data []byte) string { return newTemplate(data).metaID }
func typeOf(data []byte) string   { return newTemplate(data).typ }
