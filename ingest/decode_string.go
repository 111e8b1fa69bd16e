package ingest

import (
	"encoding/binary"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The byte-level rules of JSON strings the decoder applies: which bytes pass
// as they are, and how escapes and invalid UTF-8 decode.

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

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// simpleEscapes maps the byte after a backslash to the byte it stands for.
var simpleEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unquote decodes the body of a JSON string (between the quotes) that has
// escapes or invalid UTF-8, with encoding/json's results: invalid UTF-8 and
// lone surrogates become U+FFFD. It refuses (false) what encoding/json's
// scanner refuses: control characters, a bare '"', unknown escapes
// (including \'), and a \u without four hex digits. lone is the offset in s
// of the first \u escape of a lone surrogate, -1 if there is none.
//
// It appends to dst[:0] when dst has room for the worst case, and to a new
// slice otherwise; the caller owns the result either way.
func unquote(dst, s []byte) (out []byte, lone int, ok bool) {
	// Each input byte gives at most 3 output bytes (an invalid byte becomes
	// U+FFFD), so the result never grows past the check below.
	var b []byte
	if cap(dst) >= 3*len(s) {
		b = dst[:0]
	} else {
		b = make([]byte, 0, len(s)+utf8.UTFMax)
	}
	lone = -1
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			r++
			if r >= len(s) {
				return nil, -1, false
			}
			switch e := s[r]; e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				b = append(b, simpleEscapes[e])
				r++
			case 'u':
				rr := hex4(s[r+1:])
				if rr < 0 {
					return nil, -1, false
				}
				esc := r - 1
				r += 5
				if utf16.IsSurrogate(rr) {
					if r+1 < len(s) && s[r] == '\\' && s[r+1] == 'u' {
						rr1 := hex4(s[r+2:])
						if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
							r += 6
							b = utf8.AppendRune(b, dec)
							break
						}
					}
					rr = unicode.ReplacementChar
					if lone < 0 {
						lone = esc
					}
				}
				b = utf8.AppendRune(b, rr)
			default:
				return nil, -1, false
			}
		case c == '"', c < ' ':
			return nil, -1, false
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return b, lone, true
}

// hex4 reads four hex digits (-1 if there are not four).
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
