package replay

import (
	"sync/atomic"
	"time"
)

// entry is one event an enqueue call asks the server to hold: its template,
// why it is there, its loop pass, and for a late event its age, for a
// bad-id event the id line sent instead of its position.
type entry struct {
	t     *template
	kind  Kind
	loop  int           // loop pass: above 0 the meta.id sent is LoopID(seed, loop, t.metaID)
	age   time.Duration // KindLate: event time is send time minus age
	sseID string        // KindBadID: the id line sent instead of the position's
}

// record is how the log holds an entry: 32 bytes and no pointers, so that
// a replay of millions of events (the bench's phases hold up to 4.5
// million, and run in the process they measure) is neither work for the
// collector nor much of the memory limit: as []*entry it was 72 bytes an
// event, every one marked at every collection, 162 MB in the 50,000 ev/s
// phase.
type record struct {
	tmpl  int32 // index into entryLog.tmpls
	extra int32 // index into entryLog.extras plus one; 0: none
	loop  int32
	kind  uint8
	enq   int64        // unix nanos when enqueued (for since)
	stamp atomic.Int64 // unix nanos of the first send, when stamped
}

// extra is what few records have: a late event's age, a bad-id event's id
// line.
type extra struct {
	age   time.Duration
	sseID string
}

// recChunk is how many records a chunk of the log holds. Chunks never
// move, so a record's stamp stays where a sender found it while the log
// grows.
const recChunk = 1 << 12

// entryLog is the server's append-only event log. Appends happen under the
// server's lock; a reader takes a snapshot (logView) under the read lock and
// then reads the records below its length without it (only their stamps
// change, atomically).
type entryLog struct {
	chunks [][]record
	n      int
	tmpls  []*template
	tmplID map[*template]int32
	extras []extra
}

// logView is a snapshot of the log: the records below n.
type logView struct {
	chunks [][]record
	n      int
	tmpls  []*template
	extras []extra
}

func (l *entryLog) view() logView {
	return logView{chunks: l.chunks, n: l.n, tmpls: l.tmpls, extras: l.extras}
}

// append adds es, enqueued at enq.
func (l *entryLog) append(es []entry, enq int64) {
	if l.tmplID == nil {
		l.tmplID = map[*template]int32{}
	}
	for _, e := range es {
		id, ok := l.tmplID[e.t]
		if !ok {
			id = int32(len(l.tmpls))
			l.tmpls = append(l.tmpls, e.t)
			l.tmplID[e.t] = id
		}
		if l.n == len(l.chunks)*recChunk {
			l.chunks = append(l.chunks, make([]record, recChunk))
		}
		r := &l.chunks[l.n/recChunk][l.n%recChunk]
		r.tmpl, r.loop, r.kind, r.enq = id, int32(e.loop), uint8(e.kind), enq
		if e.age != 0 || e.sseID != "" {
			l.extras = append(l.extras, extra{age: e.age, sseID: e.sseID})
			r.extra = int32(len(l.extras))
		}
		l.n++
	}
}

// at returns record i (i < v.n).
func (v logView) at(i int) *record { return &v.chunks[i/recChunk][i%recChunk] }

// entry returns record i as the entry it was enqueued as, and its record.
func (v logView) entry(i int) (entry, *record) {
	r := v.at(i)
	e := entry{t: v.tmpls[r.tmpl], kind: Kind(r.kind), loop: int(r.loop)}
	if r.extra > 0 {
		x := v.extras[r.extra-1]
		e.age, e.sseID = x.age, x.sseID
	}
	return e, r
}
