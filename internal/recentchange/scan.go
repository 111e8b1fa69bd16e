package recentchange

import (
	"encoding/json"
	"lakehouse/internal/jsonlex"
	"strconv"
	"unicode/utf8"
)

// scanEvent is the fast path of ParseEdit. It reads the fields of rawEvent
// straight from the bytes in one pass, checking on the way that the whole
// document is valid JSON, and it gives up (ok false) on anything where
// encoding/json's rules are subtle: keys that differ from a field name only
// in case, keys with escapes, a field given twice, a value of an unexpected
// type, numbers that are not plain integers, strings that are not valid
// UTF-8, nesting deeper than maxScanDepth. ParseEdit then decodes with
// encoding/json, so every result is what encoding/json gives
// (FuzzScanEventMatchesEncodingJSON checks it).
//
// The profile of the whole appliance showed encoding/json's struct decode
// at half of silver's CPU (11 µs per event).
func scanEvent(raw []byte, ev *rawEvent) (ok bool) {
	s := scanner{jsonlex.Lexer{B: raw}}
	s.Space()
	if !s.object(0, ev.topField) {
		return false
	}
	s.Space()
	return !s.More()
}

// maxScanDepth bounds the nesting the fast path follows.
const maxScanDepth = 64

type scanner struct{ jsonlex.Lexer }

// seen bits: one per field of rawEvent, to refuse a field given twice.
type seen uint32

func (ev *rawEvent) topField(s *scanner, key []byte, depth int) bool {
	switch string(key) {
	case "meta":
		return s.once(&ev.seen, 1<<0) && s.object(depth+1, ev.metaField)
	case "type":
		return s.once(&ev.seen, 1<<1) && s.plainString(&ev.Type)
	case "namespace":
		if !s.once(&ev.seen, 1<<2) {
			return false
		}
		v, ok := s.int(32)
		n := int32(v)
		ev.Namespace = &n
		return ok
	case "title":
		return s.once(&ev.seen, 1<<3) && s.stringPtr(&ev.Title)
	case "comment":
		return s.once(&ev.seen, 1<<4) && s.stringPtr(&ev.Comment)
	case "timestamp":
		if !s.once(&ev.seen, 1<<5) {
			return false
		}
		v, ok := s.int(64)
		ev.Timestamp = &v
		return ok
	case "user":
		return s.once(&ev.seen, 1<<6) && s.stringPtr(&ev.User)
	case "bot":
		return s.once(&ev.seen, 1<<7) && s.boolPtr(&ev.Bot)
	case "minor":
		return s.once(&ev.seen, 1<<8) && s.boolPtr(&ev.Minor)
	case "length":
		if !s.once(&ev.seen, 1<<9) {
			return false
		}
		ev.Length = &oldNew{}
		return s.object(depth+1, ev.Length.field)
	case "revision":
		if !s.once(&ev.seen, 1<<10) {
			return false
		}
		ev.Revision = &oldNew{}
		return s.object(depth+1, ev.Revision.field)
	case "server_name":
		return s.once(&ev.seen, 1<<11) && s.stringPtr(&ev.ServerName)
	case "wiki":
		return s.once(&ev.seen, 1<<12) && s.stringPtr(&ev.Wiki)
	}
	if foldsTo(key, "meta", "type", "namespace", "title", "comment", "timestamp", "user", "bot",
		"minor", "length", "revision", "server_name", "wiki") {
		return false // encoding/json would match it case-insensitively
	}
	return s.skip(depth + 1)
}

func (ev *rawEvent) metaField(s *scanner, key []byte, depth int) bool {
	switch string(key) {
	case "id":
		return s.once(&ev.seen, 1<<13) && s.plainString(&ev.Meta.ID)
	case "dt":
		return s.once(&ev.seen, 1<<14) && s.plainString(&ev.Meta.DT)
	}
	if foldsTo(key, "id", "dt") {
		return false
	}
	return s.skip(depth + 1)
}

func (o *oldNew) field(s *scanner, key []byte, depth int) bool {
	switch string(key) {
	case "old":
		return s.once(&o.seen, 1<<0) && s.int64Ptr(&o.Old)
	case "new":
		return s.once(&o.seen, 1<<1) && s.int64Ptr(&o.New)
	}
	if foldsTo(key, "old", "new") {
		return false
	}
	return s.skip(depth + 1)
}

// once marks bit in *set and reports whether it was clear.
func (s *scanner) once(set *seen, bit seen) bool {
	if *set&bit != 0 {
		return false
	}
	*set |= bit
	return true
}

// foldsTo reports whether key equals one of names ignoring ASCII case (the
// caller has already compared exactly). Non-ASCII keys never fold onto
// these ASCII names except through the Kelvin and long-s signs, which
// encoding/json also folds: refuse any non-ASCII key of the right length.
func foldsTo(key []byte, names ...string) bool {
	plain := true // lower-case ASCII folds to itself: it matched exactly or not at all
	for _, c := range key {
		if c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			plain = false
			break
		}
	}
	if plain {
		return false
	}
	for _, n := range names {
		if len(key) < len(n) || len(key) > 3*len(n) {
			continue
		}
		if len(key) != len(n) {
			for _, c := range key {
				if c >= utf8.RuneSelf {
					return true
				}
			}
			continue
		}
		same := true
		for i := range len(n) {
			c := key[i]
			if c >= utf8.RuneSelf {
				return true
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != n[i] {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// object scans an object, calling field for each key (with the scanner at
// the start of the value, which field must consume).
func (s *scanner) object(depth int, field func(s *scanner, key []byte, depth int) bool) bool {
	if depth > maxScanDepth || !s.More() || s.Peek() != '{' {
		return false
	}
	s.I++
	s.Space()
	if s.Peek() == '}' {
		s.I++
		return true
	}
	for {
		s.Space()
		key, escaped, _, ok := s.String()
		if !ok || escaped {
			return false // escaped keys go to encoding/json
		}
		if !s.Byte(':') {
			return false
		}
		s.Space()
		if !field(s, key, depth) {
			return false
		}
		if end, ok := s.Next('}'); !ok || end {
			return ok
		}
	}
}

// str decodes a string value: plain bytes directly, escaped ones through
// encoding/json. It refuses invalid UTF-8 (encoding/json replaces it).
func (s *scanner) str() (string, bool) {
	start := s.I
	body, escaped, bad, ok := s.String()
	if !ok || bad >= 0 {
		return "", false
	}
	if !escaped {
		return string(body), true
	}
	var out string
	if json.Unmarshal(s.B[start:s.I], &out) != nil {
		return "", false
	}
	return out, true
}

// plainString decodes a string into a non-pointer field; null leaves it
// as it is, as encoding/json does.
func (s *scanner) plainString(dst *string) bool {
	if s.null() {
		return true
	}
	v, ok := s.str()
	*dst = v
	return ok
}

func (s *scanner) stringPtr(dst **string) bool {
	if s.null() {
		*dst = nil
		return true
	}
	v, ok := s.str()
	*dst = &v
	return ok
}

func (s *scanner) boolPtr(dst **bool) bool {
	if s.null() {
		*dst = nil
		return true
	}
	var v bool
	switch {
	case s.Lit("true"):
		v = true
	case s.Lit("false"):
	default:
		return false
	}
	*dst = &v
	return true
}

func (s *scanner) int64Ptr(dst **int64) bool {
	if s.null() {
		*dst = nil
		return true
	}
	v, ok := s.int(64)
	*dst = &v
	return ok
}

// int decodes a plain integer of the given bit size (no fraction, no
// exponent, in range). null is refused: the callers that allow it check
// first.
func (s *scanner) int(bits int) (int64, bool) {
	start := s.I
	if !s.Number() {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s.B[start:s.I]), 10, bits)
	return v, err == nil
}

func (s *scanner) null() bool { return s.Lit("null") }

// skip scans over any valid JSON value at depth.
func (s *scanner) skip(depth int) bool {
	return depth <= maxScanDepth && s.Skip(maxScanDepth-depth+1)
}
