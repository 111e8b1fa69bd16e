package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"lakehouse/internal/jsonlex"
	"strconv"
	"unsafe"
)

// decodeJSON decodes exactly one JSON value into the generic form the schema
// validator takes (map[string]any, []any, string, json.Number, bool, nil),
// keeping numbers exact so integer checks hold for ids above 2^53.
//
// Plain strings and numbers of the result share memory with raw (no copy):
// raw must not change while the result is in use. Callers that keep a
// string beyond that clone it.
//
// The profile of the ingest benchmark showed encoding/json's generic decode
// at a quarter of all CPU, so this is a small strict parser with the same
// results: FuzzDecodeJSON checks it against encoding/json (UseNumber). On
// any input it does not accept, encoding/json decodes again to give the
// error (and the same verdict).
func decodeJSON(raw []byte) (any, error) {
	v, _, err := decodeInto(raw, nil)
	return v, err
}

// decodeInto is decodeJSON taking the result's maps and slices from s when
// s is not nil: they stay valid only until s.release. It also returns the
// first flaw of the text (a key given twice in one object, invalid UTF-8, a
// lone surrogate escape), which the decoded value cannot show: encoding/json
// keeps the last of two equal keys and replaces bad text with U+FFFD.
func decodeInto(raw []byte, s *docScratch) (any, flaw, error) {
	p := fastParser{Lexer: jsonlex.Lexer{B: raw}, s: s, flaw: flaw{pending: noFlaw}}
	p.Space()
	v, ok := p.value(0)
	if ok {
		p.Space()
		if p.I == len(p.B) {
			return v, p.flaw, nil
		}
	}
	v, err := decodeJSONStd(raw)
	// The fast parser accepts every text encoding/json accepts
	// (FuzzDecodeJSON): a text only encoding/json takes was not checked.
	return v, flaw{kind: flawUnchecked}, err
}

// decodeJSONStd is the reference decoder (and the source of error texts).
func decodeJSONStd(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty data")
		}
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// maxDepth matches encoding/json's nesting limit: at most this many nested
// objects and arrays.
const maxDepth = 10000

type fastParser struct {
	jsonlex.Lexer
	s    *docScratch // nil: allocate every map and slice
	flaw flaw        // the first flaw found
}

// flawKind says what is wrong with a well-formed JSON text.
type flawKind uint8

const (
	flawNone      flawKind = iota
	flawDuplicate          // an object has a key twice
	flawBadUTF8            // a string holds bytes that are not UTF-8
	flawSurrogate          // a string holds a \u escape of a lone UTF-16 surrogate
	flawUnchecked          // decoded by encoding/json only: not checked
)

// noFlaw is flaw.pending while there is no flaw.
const noFlaw = -1

// flaw is the first flaw of a text: its kind, the byte offset where it is,
// and where in the document (a JSON pointer, built as the parser returns
// from the values that hold it).
type flaw struct {
	kind   flawKind
	offset int
	inKey  bool     // the bad text is an object key
	path   []string // the pointer's tokens, innermost first
	// pending is the depth of the outermost value whose own key or index
	// is not yet in path; noFlaw while there is no flaw.
	pending int
}

// pointer renders the flaw's location as a JSON pointer ("" is the root).
func (f *flaw) pointer() string {
	var b []byte
	for i := len(f.path) - 1; i >= 0; i-- {
		b = append(b, '/')
		for _, c := range []byte(f.path[i]) {
			switch c {
			case '~':
				b = append(b, "~0"...)
			case '/':
				b = append(b, "~1"...)
			default:
				b = append(b, c)
			}
		}
	}
	return string(b)
}

// found records a flaw at offset when it is the first; the value at depth
// holds it (its own key is added by its parent).
func (p *fastParser) found(kind flawKind, offset, depth int) {
	if p.flaw.kind == flawNone {
		p.flaw = flaw{kind: kind, offset: offset, pending: depth}
	}
}

// within adds key (or index) to the flaw's path when the value just parsed
// at depth+1 holds it.
func (p *fastParser) within(depth int, key string) {
	if p.flaw.pending == depth+1 {
		p.flaw.path = append(p.flaw.path, key)
		p.flaw.pending = depth
	}
}

func (p *fastParser) value(depth int) (any, bool) {
	if p.I >= len(p.B) {
		return nil, false
	}
	switch c := p.B[p.I]; {
	case (c == '{' || c == '[') && depth >= maxDepth:
		return nil, false
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str(depth)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.Lit("true")
	case c == 'f':
		return false, p.Lit("false")
	case c == 'n':
		return nil, p.Lit("null")
	}
	return nil, false
}

// object parses the object at I (its '{'), a value at depth, recording a
// key given twice as the text's flaw.
func (p *fastParser) object(depth int) (any, bool) {
	p.I++
	var m map[string]any
	if p.s != nil {
		m = p.s.newMap()
	} else {
		m = make(map[string]any, 8)
	}
	p.Space()
	if p.I < len(p.B) && p.B[p.I] == '}' {
		p.I++
		return m, true
	}
	for {
		p.Space()
		at := p.I
		k, ok := p.str(depth)
		if !ok {
			return nil, false
		}
		if p.flaw.pending == depth && p.flaw.path == nil && p.flaw.offset >= at {
			p.flaw.inKey = true // the bad text is this key: the flaw is at the object
		}
		if !p.Byte(':') {
			return nil, false
		}
		p.Space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		p.within(depth, k)
		n := len(m)
		m[k] = v
		if len(m) == n && p.flaw.kind == flawNone {
			p.found(flawDuplicate, at, depth)
			p.flaw.path = append(p.flaw.path, k)
		}
		if end, ok := p.Next('}'); !ok {
			return nil, false
		} else if end {
			return m, true
		}
	}
}

// array parses the array at I (its '['), a value at depth.
func (p *fastParser) array(depth int) (any, bool) {
	p.I++
	slot, a := -1, []any(nil)
	if p.s != nil {
		slot, a = p.s.newArr()
	} else {
		a = make([]any, 0, 4)
	}
	p.Space()
	if p.I < len(p.B) && p.B[p.I] == ']' {
		p.I++
		return a, true
	}
	for {
		p.Space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		if p.flaw.pending == depth+1 {
			p.within(depth, strconv.Itoa(len(a)))
		}
		a = append(a, v)
		if end, ok := p.Next(']'); !ok {
			return nil, false
		} else if end {
			if p.s != nil {
				p.s.keepArr(slot, a)
			}
			return a, true
		}
	}
}

// str parses a string, a value at depth or a key of the object at depth.
// Plain strings (no escapes, valid UTF-8) share raw's memory; anything else
// is unquoted as encoding/json does (FuzzDecodeJSON compares them), into the
// scratch's arena when there is one. Invalid UTF-8 and lone surrogate
// escapes are recorded as flaws.
func (p *fastParser) str(depth int) (string, bool) {
	start := p.I
	body, escaped, bad, ok := p.String()
	if !ok {
		return "", false
	}
	if bad >= 0 {
		p.found(flawBadUTF8, start+1+bad, depth) // encoding/json replaces it with U+FFFD
	}
	if !escaped && bad < 0 {
		return unsafeString(body), true
	}
	// With a scratch, unquote into its arena when the worst case fits.
	var dst []byte
	arena := p.s != nil && cap(p.s.text)-len(p.s.text) >= 3*len(body)
	if arena {
		dst = p.s.text[len(p.s.text):]
	}
	out, lone, ok := jsonlex.Unquote(dst, body)
	if !ok {
		return "", false
	}
	if lone >= 0 {
		p.found(flawSurrogate, start+1+lone, depth)
	}
	if arena {
		p.s.text = p.s.text[:len(p.s.text)+len(out)]
	}
	return unsafeString(out), true
}

// number parses a number (JSON's grammar) as encoding/json's UseNumber
// does: its text.
func (p *fastParser) number() (any, bool) {
	start := p.I
	if !p.Number() {
		return nil, false
	}
	return json.Number(unsafeString(p.B[start:p.I])), true
}

// unsafeString is b as a string without a copy; b must not change while
// the string is in use.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
