// Package jsonlex is the byte-level JSON lexer the project's hand-written
// scanners share: whitespace, the separators of objects and arrays,
// literals, number grammar, strings (with their escapes checked, and
// unquoted as encoding/json does) and skipping a whole value. ingest's
// decoder (the contract check's value tree), internal/recentchange's field
// scanner (silver and verify) and ingest/replay's field locator build on
// it, so a JSON rule is fixed in one place. It holds no state beyond a
// Lexer's position and allocates nothing but Unquote's output.
package jsonlex

import (
	"encoding/binary"
	"unicode/utf8"
)

// Lexer reads the JSON text B from position I. Its methods advance I past
// what they accept; after a method reports failure, I is unspecified.
type Lexer struct {
	B []byte
	I int
}

// More reports whether bytes remain.
func (l *Lexer) More() bool { return l.I < len(l.B) }

// Peek returns the byte at I (0 at the end).
func (l *Lexer) Peek() byte {
	if l.I < len(l.B) {
		return l.B[l.I]
	}
	return 0
}

// Space skips JSON whitespace.
func (l *Lexer) Space() {
	for l.I < len(l.B) {
		switch l.B[l.I] {
		case ' ', '\t', '\n', '\r':
			l.I++
		default:
			return
		}
	}
}

// Byte skips whitespace and then c; it reports whether c was there.
func (l *Lexer) Byte(c byte) bool {
	l.Space()
	if l.I < len(l.B) && l.B[l.I] == c {
		l.I++
		return true
	}
	return false
}

// Next consumes what follows an element of an object or array: a comma
// (end false) or the closing byte (end true); ok is false for anything else.
func (l *Lexer) Next(closing byte) (end, ok bool) {
	l.Space()
	if l.I >= len(l.B) {
		return false, false
	}
	switch l.B[l.I] {
	case ',':
		l.I++
		return false, true
	case closing:
		l.I++
		return true, true
	}
	return false, false
}

// Lit consumes word (true, false, null) if the text continues with it.
func (l *Lexer) Lit(word string) bool {
	if len(l.B)-l.I >= len(word) && string(l.B[l.I:l.I+len(word)]) == word {
		l.I += len(word)
		return true
	}
	return false
}

// Number consumes a number of JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (l *Lexer) Number() bool {
	if l.I < len(l.B) && l.B[l.I] == '-' {
		l.I++
	}
	switch {
	case l.I < len(l.B) && l.B[l.I] == '0':
		l.I++
	case !l.digits():
		return false
	}
	if l.I < len(l.B) && l.B[l.I] == '.' {
		l.I++
		if !l.digits() {
			return false
		}
	}
	if l.I < len(l.B) && (l.B[l.I] == 'e' || l.B[l.I] == 'E') {
		l.I++
		if l.I < len(l.B) && (l.B[l.I] == '+' || l.B[l.I] == '-') {
			l.I++
		}
		if !l.digits() {
			return false
		}
	}
	return true
}

func (l *Lexer) digits() bool {
	n := l.I
	for l.I < len(l.B) && '0' <= l.B[l.I] && l.B[l.I] <= '9' {
		l.I++
	}
	return l.I > n
}

// String consumes a string and returns its body (the bytes between the
// quotes, still escaped), whether it has escapes, and where its first
// invalid UTF-8 byte is (an index into body; -1 if none). It refuses a
// control character, an unknown escape or a \u without four hex digits.
// A body with neither escapes nor invalid UTF-8 is the string's value.
func (l *Lexer) String() (body []byte, escaped bool, badUTF8 int, ok bool) {
	if l.I >= len(l.B) || l.B[l.I] != '"' {
		return nil, false, -1, false
	}
	start := l.I + 1
	l.I++
	badUTF8 = -1
	for l.I < len(l.B) {
		l.I = skipPlain(l.B, l.I)
		if l.I >= len(l.B) {
			break
		}
		switch c := l.B[l.I]; {
		case c == '"':
			l.I++
			return l.B[start : l.I-1], escaped, badUTF8, true
		case c == '\\':
			escaped = true
			if !l.escape() {
				return nil, false, -1, false
			}
		case c < 0x20:
			return nil, false, -1, false
		default: // c >= utf8.RuneSelf
			r, size := utf8.DecodeRune(l.B[l.I:])
			if r == utf8.RuneError && size == 1 && badUTF8 < 0 {
				badUTF8 = l.I - start
			}
			l.I += size
		}
	}
	return nil, false, -1, false
}

// escape consumes one escape sequence at I (the backslash included).
func (l *Lexer) escape() bool {
	if l.I+1 >= len(l.B) {
		return false
	}
	switch l.B[l.I+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		l.I += 2
		return true
	case 'u':
		if l.I+6 > len(l.B) {
			return false
		}
		for _, h := range l.B[l.I+2 : l.I+6] {
			if !isHex(h) {
				return false
			}
		}
		l.I += 6
		return true
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Skip consumes one value of any kind, nested at most maxDepth deep.
func (l *Lexer) Skip(maxDepth int) bool {
	return l.skip(0, maxDepth)
}

func (l *Lexer) skip(depth, maxDepth int) bool {
	if l.I >= len(l.B) {
		return false
	}
	switch c := l.B[l.I]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return false
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		l.I++
		l.Space()
		if l.I < len(l.B) && l.B[l.I] == closing {
			l.I++
			return true
		}
		for {
			l.Space()
			if c == '{' {
				if _, _, _, ok := l.String(); !ok || !l.Byte(':') {
					return false
				}
				l.Space()
			}
			if !l.skip(depth+1, maxDepth) {
				return false
			}
			if end, ok := l.Next(closing); !ok || end {
				return ok
			}
		}
	case c == '"':
		_, _, _, ok := l.String()
		return ok
	case c == '-' || '0' <= c && c <= '9':
		return l.Number()
	case c == 't':
		return l.Lit("true")
	case c == 'f':
		return l.Lit("false")
	case c == 'n':
		return l.Lit("null")
	}
	return false
}

// asciiPlain marks the bytes a string can hold as they are: printable
// ASCII except '"' and '\\'.
var asciiPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipPlain returns the index of the first byte at or after i that is not
// asciiPlain (len(b) if none), testing eight bytes at a time: strings are
// most of an event's bytes.
func skipPlain(b []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		quote := w ^ (ones * '"')
		slash := w ^ (ones * '\\')
		// A byte of x is zero (or, for ctrl, below 0x20) where the high bit of
		// the expression is set; any byte >= 0x80 sets it in w itself.
		special := (quote - ones) & ^quote
		special |= (slash - ones) & ^slash
		special |= (w - ones*0x20) & ^w
		if (special|w)&highs != 0 {
			break
		}
	}
	for i < len(b) && asciiPlain[b[i]] {
		i++
	}
	return i
}
