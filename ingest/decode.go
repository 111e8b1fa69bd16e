package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
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
	p := fastParser{b: raw, s: s, flaw: flaw{pending: noFlaw}}
	p.ws()
	v, ok := p.value(0)
	if ok {
		p.ws()
		if p.i == len(p.b) {
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
	b    []byte
	i    int
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

// next consumes what follows an element of an object or array: a comma
// (end false) or the closing byte (end true); ok is false for anything else.
func (p *fastParser) next(closing byte) (end, ok bool) {
	p.ws()
	if p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return false, true
	case closing:
		p.i++
		return true, true
	}
	return false, false
}

func (p *fastParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) value(depth int) (any, bool) {
	if p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case (c == '{' || c == '[') && depth >= maxDepth:
		return nil, false
	case c == '{':
		p.i++
		var m map[string]any
		if p.s != nil {
			m = p.s.newMap()
		} else {
			m = make(map[string]any, 8)
		}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			p.ws()
			at := p.i
			k, ok := p.str(depth)
			if !ok {
				return nil, false
			}
			if p.flaw.pending == depth && p.flaw.path == nil && p.flaw.offset >= at {
				p.flaw.inKey = true // the bad text is this key: the flaw is at the object
			}
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false
			}
			p.i++
			p.ws()
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
			if end, ok := p.next('}'); !ok {
				return nil, false
			} else if end {
				return m, true
			}
		}
	case c == '[':
		p.i++
		slot, a := -1, []any(nil)
		if p.s != nil {
			slot, a = p.s.newArr()
		} else {
			a = make([]any, 0, 4)
		}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return a, true
		}
		for {
			p.ws()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			if p.flaw.pending == depth+1 {
				p.within(depth, strconv.Itoa(len(a)))
			}
			a = append(a, v)
			if end, ok := p.next(']'); !ok {
				return nil, false
			} else if end {
				if p.s != nil {
					p.s.keepArr(slot, a)
				}
				return a, true
			}
		}
	case c == '"':
		return p.str(depth)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.lit("true")
	case c == 'f':
		return false, p.lit("false")
	case c == 'n':
		return nil, p.lit("null")
	}
	return nil, false
}

func (p *fastParser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// str parses a string, a value at depth or a key of the object at depth.
// Plain strings (no escapes, valid UTF-8) share raw's memory; anything else
// is unquoted as encoding/json does (FuzzDecodeJSON compares them), into the
// scratch's arena when there is one. Invalid UTF-8 and lone surrogate
// escapes are recorded as flaws.
func (p *fastParser) str(depth int) (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start := p.i
	p.i++
	plain := true
	for p.i < len(p.b) {
		p.i = skipPlain(p.b, p.i)
		if p.i >= len(p.b) {
			break
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if plain {
				return unsafeString(p.b[start+1 : p.i-1]), true
			}
			body := p.b[start+1 : p.i-1]
			// With a scratch, unquote into its arena when the worst case fits.
			var dst []byte
			arena := p.s != nil && cap(p.s.text)-len(p.s.text) >= 3*len(body)
			if arena {
				dst = p.s.text[len(p.s.text):]
			}
			out, lone, ok := unquote(dst, body)
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
		case c == '\\':
			plain = false
			p.i += 2
			continue
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				plain = false // encoding/json replaces it with U+FFFD
				p.found(flawBadUTF8, p.i, depth)
			}
			p.i += size
			continue
		}
		p.i++
	}
	return "", false
}

// number checks JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *fastParser) number() (any, bool) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	if p.i >= len(p.b) {
		return nil, false
	}
	if p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return json.Number(unsafeString(p.b[start:p.i])), true
}
