package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"
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
	p := fastParser{b: raw}
	p.ws()
	v, ok := p.value(0)
	if ok {
		p.ws()
		if p.i == len(p.b) {
			return v, nil
		}
	}
	return decodeJSONStd(raw)
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

// maxDepth matches encoding/json's nesting limit.
const maxDepth = 10000

type fastParser struct {
	b []byte
	i int
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
	if p.i >= len(p.b) || depth > maxDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := make(map[string]any, 8)
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			p.ws()
			k, ok := p.str()
			if !ok {
				return nil, false
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
			m[k] = v
			p.ws()
			if p.i >= len(p.b) {
				return nil, false
			}
			switch p.b[p.i] {
			case ',':
				p.i++
			case '}':
				p.i++
				return m, true
			default:
				return nil, false
			}
		}
	case c == '[':
		p.i++
		a := make([]any, 0, 4)
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
			a = append(a, v)
			p.ws()
			if p.i >= len(p.b) {
				return nil, false
			}
			switch p.b[p.i] {
			case ',':
				p.i++
			case ']':
				p.i++
				return a, true
			default:
				return nil, false
			}
		}
	case c == '"':
		return p.str()
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

// str parses a string. Plain strings (no escapes, valid UTF-8) are copied
// directly; anything else goes through encoding/json for identical results.
func (p *fastParser) str() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start := p.i
	p.i++
	plain := true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if plain {
				return unsafeString(p.b[start+1 : p.i-1]), true
			}
			var s string
			if json.Unmarshal(p.b[start:p.i], &s) != nil {
				return "", false
			}
			return s, true
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

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
