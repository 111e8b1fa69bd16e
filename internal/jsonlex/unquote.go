package jsonlex

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// simpleEscapes maps the byte after a backslash to the byte it stands for.
var simpleEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// Unquote decodes the body of a JSON string (between the quotes) that has
// escapes or invalid UTF-8, with encoding/json's results: invalid UTF-8 and
// lone surrogates become U+FFFD. It refuses (false) what encoding/json's
// scanner refuses: control characters, a bare '"', unknown escapes
// (including \'), and a \u without four hex digits. lone is the offset in s
// of the first \u escape of a lone surrogate, -1 if there is none.
//
// It appends to dst[:0] when dst has room for the worst case, and to a new
// slice otherwise; the caller owns the result either way.
func Unquote(dst, s []byte) (out []byte, lone int, ok bool) {
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
