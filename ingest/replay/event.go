package replay

import (
	"bufio"
	"crypto/sha1"
	"encoding/binary"
	"lakehouse/internal/jsonlex"
	"strconv"
	"sync/atomic"
	"time"
)

// Kind says why the replay server holds an event.
type Kind int

// Kinds of replayed events.
const (
	KindLoop      Kind = iota // an event of a Loops pass: valid, on time
	KindResend                // a repeat of an earlier event (same bytes, same meta.id)
	KindViolation             // breaks the contract: must land in the DLQ
	KindLate                  // valid, stamped now minus an age
	KindCanary                // valid, meta.domain "canary": must be skipped
	KindOversized             // valid JSON but longer than a given size
	KindBadID                 // valid, sent with an SSE id that is no position (see Server.BadIDs)
)

var kindNames = [...]string{"loop", "resend", "violation", "late", "canary", "oversized", "bad-id"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// span fields that are rewritten when an event is sent.
const (
	fieldID   = 1 // meta.id (string value, quotes included)
	fieldDT   = 2 // meta.dt (string value, quotes included)
	fieldTS   = 3 // timestamp (number)
	fieldType = 4 // type (string value; located, never rewritten)
)

type span struct {
	start, end int
	field      byte
}

// template is one event's bytes with the byte ranges of the fields the
// server rewrites.
type template struct {
	data   []byte
	spans  []span // sorted by start; only fieldID, fieldDT, fieldTS
	metaID string
	typ    string
	delay  time.Duration // meta.dt minus timestamp in the original
}

func newTemplate(data []byte) *template {
	t := &template{data: data}
	var dtVal string
	var tsVal int64
	for _, s := range locateFields(data) {
		val := data[s.start:s.end]
		switch s.field {
		case fieldType:
			if len(val) >= 2 {
				t.typ = string(val[1 : len(val)-1])
			}
			continue
		case fieldID:
			if len(val) >= 2 {
				t.metaID = string(val[1 : len(val)-1])
			}
		case fieldDT:
			if len(val) >= 2 {
				dtVal = string(val[1 : len(val)-1])
			}
		case fieldTS:
			tsVal, _ = strconv.ParseInt(string(val), 10, 64)
		}
		t.spans = append(t.spans, s)
	}
	if dt, err := time.Parse(time.RFC3339Nano, dtVal); err == nil && tsVal > 0 {
		t.delay = dt.Sub(time.Unix(tsVal, 0))
	}
	t.delay = min(max(t.delay, 0), 10*time.Second)
	return t
}

// metaID is the meta.id the entry is sent with. Loop ids are derived when
// needed rather than stored: a replay of millions of events (the bench
// holds 2.25 million) would otherwise keep 48 bytes more per event.
func (e entry) metaID(seed int64) string {
	if e.loop > 0 {
		return LoopID(seed, e.loop, e.t.metaID)
	}
	return e.t.metaID
}

// writeData writes the entry's data with meta.id replaced and, if stamp,
// timestamp and meta.dt rewritten for the first send time of the entry,
// kept in first (so a resend of the same stored entry is byte-identical, as
// a resumed source's).
func (e entry) writeData(w *bufio.Writer, seed int64, stamp bool, first *atomic.Int64, now time.Time) {
	var dt, ts []byte
	if stamp {
		st := first.Load()
		if st == 0 {
			first.CompareAndSwap(0, now.UnixNano())
			st = first.Load()
		}
		intake := time.Unix(0, st).Add(-e.age).UTC()
		var dtb [32]byte
		dt = append(intake.AppendFormat(append(dtb[:0], '"'), dtLayout), '"')
		var tsb [24]byte
		ts = strconv.AppendInt(tsb[:0], intake.Add(-e.t.delay).Unix(), 10)
	}
	var id string // "" keeps the template's bytes
	if e.loop > 0 {
		id = e.metaID(seed)
	}
	data := e.t.data
	prev := 0
	for _, s := range e.t.spans {
		var repl []byte
		switch {
		case s.field == fieldID && id != "":
			w.Write(data[prev:s.start])
			w.WriteByte('"')
			w.WriteString(id)
			w.WriteByte('"')
			prev = s.end
			continue
		case s.field == fieldDT && dt != nil:
			repl = dt
		case s.field == fieldTS && ts != nil:
			repl = ts
		default:
			continue
		}
		w.Write(data[prev:s.start])
		w.Write(repl)
		prev = s.end
	}
	w.Write(data[prev:])
}

// LoopID returns the meta.id the replay server gives an event with meta.id
// id in loop pass loop: loop 0 keeps the recorded id; later loops get a
// name-based (version 5 layout) UUID of seed, loop and id, so every loop is
// fresh and every id can be derived again.
func LoopID(seed int64, loop int, id string) string {
	if loop == 0 {
		return id
	}
	h := sha1.New()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(seed))
	binary.BigEndian.PutUint64(b[8:], uint64(loop))
	h.Write(b[:])
	h.Write([]byte(id))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	return formatUUID(u, 5)
}

// locateFields finds the byte ranges of meta.id, meta.dt, timestamp and type
// in a JSON object without decoding it. Malformed input yields what was
// found before the error.
func locateFields(b []byte) []span {
	p := &locator{Lexer: jsonlex.Lexer{B: b}}
	p.value(0, "")
	return p.spans
}

type locator struct {
	jsonlex.Lexer
	spans []span
	bad   bool
}

// value parses one value at depth with the given key path ("" at the root,
// "meta" for meta's members) and records wanted fields.
func (p *locator) value(depth int, parent string) {
	p.Space()
	if p.I >= len(p.B) {
		p.bad = true
		return
	}
	switch p.B[p.I] {
	case '{':
		p.object(depth, parent)
	case '[':
		p.array(depth)
	case '"':
		if _, _, _, ok := p.String(); !ok {
			p.bad = true
		}
	default:
		for p.I < len(p.B) {
			switch p.B[p.I] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			p.I++
		}
	}
}

// object parses the object at I, recording the wanted fields among its
// members.
func (p *locator) object(depth int, parent string) {
	p.I++
	for !p.bad {
		p.Space()
		if p.I < len(p.B) && p.B[p.I] == '}' {
			p.I++
			return
		}
		body, _, _, ok := p.String()
		if !ok || !p.Byte(':') {
			p.bad = true
			return
		}
		key := string(body)
		p.Space()
		vs := p.I
		child := ""
		if depth == 0 {
			child = key
		}
		p.value(depth+1, child)
		if p.bad {
			return
		}
		if f := wanted(depth, parent, key); f != 0 {
			p.spans = append(p.spans, span{start: vs, end: p.I, field: f})
		}
		if end, ok := p.Next('}'); !ok || end {
			p.bad = !ok
			return
		}
	}
}

// wanted is the field a member is, or 0.
func wanted(depth int, parent, key string) byte {
	switch {
	case depth == 0 && key == "timestamp":
		return fieldTS
	case depth == 0 && key == "type":
		return fieldType
	case depth == 1 && parent == "meta" && key == "id":
		return fieldID
	case depth == 1 && parent == "meta" && key == "dt":
		return fieldDT
	}
	return 0
}

// array parses the array at I.
func (p *locator) array(depth int) {
	p.I++
	for !p.bad {
		p.Space()
		if p.I < len(p.B) && p.B[p.I] == ']' {
			p.I++
			return
		}
		p.value(depth+1, "")
		if p.bad {
			return
		}
		if end, ok := p.Next(']'); !ok || end {
			p.bad = !ok
			return
		}
	}
}
