package ingest

import (
	"bytes"
	"io"
)

// oversizedType is the SSE event type frameGuard gives the stand-in of a
// frame it cut: the client routes such an event to the DLQ, never to the
// topic (a source that names its own events so only gets them dead-lettered).
const oversizedType = "lakehouse.frame-too-large"

// DefaultMaxIDBytes bounds an SSE id the client accepts as a stream
// position: a longer one is never stored or sent back as Last-Event-ID
// (Wikimedia's ids are JSON arrays of a few hundred bytes; one of 200 KB got
// 431 from the server at every reconnect).
const DefaultMaxIDBytes = 4 << 10

// frameGuard sits between the stream's response body and go-sse's parser,
// which reads a whole frame (event) into one buffer and ends the connection
// with bufio.ErrTooLong when a frame does not fit: reconnecting read the same
// frame again, so one oversized frame stopped ingest for good. The guard
// passes the stream through unchanged, except that:
//
//   - a frame longer than maxFrame bytes is cut there: the bytes passed so
//     far are ended as a frame of type oversizedType (its data is the
//     frame's data up to the cut, its id the frame's id if that came
//     before the cut), and the rest of the frame is dropped;
//   - an id line whose value is not a valid, round-tripping HTTP header
//     value (control characters, leading or trailing blanks) or is longer
//     than maxID bytes is dropped whole, so the event keeps the last good
//     position and the id never reaches a Last-Event-ID header.
//
// It holds at most one id line (maxID bytes and its field name); everything
// else streams through.
type frameGuard struct {
	r        io.Reader
	maxFrame int
	maxID    int
	// badID is told of each id line dropped: a prefix of its value (at
	// most maxID bytes), the value's length so far and why.
	badID func(prefix []byte, n int, reason string)

	in  []byte // read buffer
	out []byte // processed bytes not yet returned
	buf []byte // out's backing array, reused
	err error  // the reader's error, returned once out is drained

	frameLen  int  // bytes of the current frame (source bytes, dropped ones too)
	lineStart bool // the previous source byte ended a line (or none came yet)
	afterCR   bool // the previous source byte was '\r' (a '\n' next is the same line end)
	passLF    bool // ... and it was passed on, so that '\n' is too
	outStart  bool // the last byte passed on ended a line (or none was passed)
	mode      guardMode
	head      []byte // the first bytes of a line that may be an id line
	idLine    []byte // the id line being held (field name included)
}

type guardMode int

const (
	passLine  guardMode = iota // pass the rest of the line on
	lineHead                   // at a line's first bytes: is it an id line?
	holdID                     // holding an id line until its end
	dropLine                   // dropping the rest of a refused id line
	dropFrame                  // dropping the rest of a cut frame
)

var idField = []byte("id:")

func newFrameGuard(r io.Reader, maxFrame, maxID int, badID func([]byte, int, string)) *frameGuard {
	return &frameGuard{r: r, maxFrame: maxFrame, maxID: maxID, badID: badID,
		in: make([]byte, 64<<10), lineStart: true, outStart: true, mode: lineHead}
}

// Read implements io.Reader.
func (g *frameGuard) Read(p []byte) (int, error) {
	for len(g.out) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		g.out = g.buf[:0]
		n, err := g.r.Read(g.in)
		g.process(g.in[:n])
		g.buf = g.out[:0]
		g.err = err
		if n == 0 && err == nil {
			return 0, nil
		}
	}
	n := copy(p, g.out)
	g.out = g.out[n:]
	return n, nil
}

// process runs b through the guard, appending what passes to g.out.
func (g *frameGuard) process(b []byte) {
	for len(b) > 0 {
		c := b[0]
		if g.afterCR && c == '\n' { // the second half of a CRLF line end
			g.afterCR = false
			b = b[1:]
			g.frameLen++
			if g.passLF {
				g.emit([]byte{c})
			}
			continue
		}
		g.afterCR = false
		if c == '\n' || c == '\r' {
			g.endLine(c)
			b = b[1:]
			continue
		}
		switch g.mode {
		case lineHead:
			g.lineStart = false
			b = b[1:]
			g.frameLen++
			if g.frameLen > g.maxFrame {
				g.cut()
				continue
			}
			g.head = append(g.head, c)
			switch {
			case bytes.Equal(g.head, idField):
				g.mode, g.idLine, g.head = holdID, append(g.idLine[:0], g.head...), g.head[:0]
			case bytes.HasPrefix(idField, g.head):
				// still undecided
			default:
				g.mode = passLine
				g.emit(g.head)
				g.head = g.head[:0]
			}
		case passLine, holdID, dropLine, dropFrame:
			// The run of bytes up to the next line end.
			i := indexEOL(b)
			if i < 0 {
				i = len(b)
			}
			run := b[:i]
			b = b[i:]
			g.lineStart = false
			g.body(run)
		}
	}
}

// body handles a run of bytes inside a line (no line end) in the current
// mode.
func (g *frameGuard) body(run []byte) {
	switch g.mode {
	case passLine:
		if room := g.maxFrame - g.frameLen; len(run) > room {
			g.emit(run[:max(room, 0)])
			g.frameLen += len(run)
			g.cut()
			return
		}
		g.frameLen += len(run)
		g.emit(run)
	case holdID:
		g.frameLen += len(run)
		value := len(g.idLine) - len("id:") + len(run)
		if value > g.maxID+1 { // +1: the blank after the colon is not part of the value
			g.refuseID(run, "longer than the id limit")
			g.mode = dropLine
		} else {
			g.idLine = append(g.idLine, run...)
		}
		if g.frameLen > g.maxFrame {
			g.cut()
		}
	case dropLine, dropFrame:
		g.frameLen += len(run)
		if g.mode == dropLine && g.frameLen > g.maxFrame {
			g.cut()
		}
	}
}

// endLine handles a line end c ('\n' or '\r').
func (g *frameGuard) endLine(c byte) {
	g.frameLen++
	blank := g.lineStart
	g.lineStart, g.afterCR, g.passLF = true, c == '\r', false
	switch g.mode {
	case lineHead:
		// A short line: "id" alone (an empty id, which passes: it keeps
		// the last position, see stream), or a blank line.
		g.emit(g.head)
		g.head = g.head[:0]
		g.emitEOL(c)
	case passLine:
		g.emitEOL(c)
	case holdID:
		value := g.idLine[len("id:"):]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if reason := badIDReason(value, g.maxID); reason != "" {
			g.refuseID(nil, reason)
		} else {
			g.emit(g.idLine)
			g.emitEOL(c)
		}
		g.idLine = g.idLine[:0]
	case dropLine:
		// The refused id line's end goes with it.
	case dropFrame:
		if blank { // the cut frame ends here
			g.frameLen, g.mode = 0, lineHead
		}
		return
	}
	g.mode = lineHead
	if blank {
		g.frameLen = 0
	}
}

// refuseID reports the held id line (plus more, a run beyond the limit) as
// refused and forgets it.
func (g *frameGuard) refuseID(more []byte, reason string) {
	value := g.idLine[len("id:"):]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	n := len(value) + len(more)
	if g.badID != nil {
		g.badID(value[:min(len(value), g.maxID)], n, reason)
	}
	g.idLine = g.idLine[:0]
}

// cut ends the frame passed on so far as an oversizedType event and drops
// the rest of it.
func (g *frameGuard) cut() {
	g.head, g.idLine = g.head[:0], g.idLine[:0] // an id line held goes with the frame
	if !g.outStart {
		g.emit([]byte{'\n'})
	}
	g.emit([]byte("event: " + oversizedType + "\n\n"))
	g.mode = dropFrame
}

// emitEOL passes the line end c on (and the '\n' after it, for a '\r').
func (g *frameGuard) emitEOL(c byte) {
	g.emit([]byte{c})
	g.passLF = c == '\r'
}

func (g *frameGuard) emit(b []byte) {
	if len(b) == 0 {
		return
	}
	g.out = append(g.out, b...)
	last := b[len(b)-1]
	g.outStart = last == '\n' || last == '\r'
}

// indexEOL returns the index of the first '\n' or '\r' in b, or -1.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(b) {
		return -1
	}
	return i
}

// badIDReason says why id cannot be a stream position ("" if it can): it
// must be at most limit bytes and a header value that round-trips (no
// control characters, no leading or trailing blanks, which a server trims).
// It takes the id as it comes, a string or bytes, without a copy (it ran
// for every event).
func badIDReason[T string | []byte](id T, limit int) string {
	switch {
	case len(id) > limit:
		return "longer than the id limit"
	case !validHeaderValue(id):
		return "not a valid HTTP header value"
	case len(id) > 0 && (isBlank(id[0]) || isBlank(id[len(id)-1])):
		return "leading or trailing blanks would not survive a header"
	}
	return ""
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// validHeaderValue is httpguts.ValidHeaderFieldValue (no control character
// but the tab) for a string or bytes: with bytes it converted every event's
// id line to a string.
func validHeaderValue[T string | []byte](v T) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
