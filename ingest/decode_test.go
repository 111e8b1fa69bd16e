package ingest

import (
	"bytes"
	"encoding/json"
	"lakehouse/ingest/replay"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// FuzzDecodeJSON checks the fast decoder against encoding/json: the same
// verdict on every input and the same value when both accept.
func FuzzDecodeJSON(f *testing.F) {
	for _, e := range readSample(f).Events {
		f.Add(e)
	}
	for i, e := range replay.Generate(4, len(replay.ViolationKinds)).Events {
		f.Add(replay.Violate(e, i))
	}
	for _, s := range []string{``, ` `, `{}`, `[]`, `[1,]`, `{"a":1,}`, `01`, `-0`, `-`, `1e`, `1.`, `.5`, `1E+2`, `"\u00e9\ud83d\ude00"`,
		`"\ud800"`, `"\ud800\u0041"`, `{"a":1,"a":2}`, `{"a":[{"b":1,"b":2}]}`, `{"a\u0000":1,"a\u0000":2}`, "{\"\xff\":1}", `{"k":["x","\udc00"]}`, `"\udc00\ud800"`, `"\ud83d\ude00x"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\'"`, `"\u12"`, `"\u12g4"`, `"\u00E9\u00e9"`, "\"\xff\"", "\"a\\n\xc3\"", "\"a\tb\"", `"\x"`, `{"a":1}{}`, `{"a" 1}`, `nul`, `truex`, ` [true , false,null ] `, `{"a":{"a":1},"a":2}`} {
		f.Add([]byte(s))
	}
	// More escaped text than a scratch's arena holds.
	f.Add([]byte(`{"a":[` + strings.Repeat("\"\\u00e9\\n\\\"\xff\",", 3000) + `"end"],"b":"\t"}`))
	// A scratch that always holds the maps and slices of another document,
	// as in Contract.Check.
	s := newDocScratch()
	other := readSample(f).Events[1]
	f.Fuzz(func(t *testing.T, b []byte) {
		got, fl, gotErr := decodeInto(b, nil)
		want, wantErr := decodeJSONStd(b)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: fast err %v, encoding/json err %v", b, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast %#v, encoding/json %#v", b, got, want)
		}
		if gotErr == nil {
			// The fast parser itself took it (no fallback), and its flaw
			// is the reference's.
			if fl.kind == flawUnchecked {
				t.Fatalf("%q: the fast parser refused what encoding/json accepts", b)
			}
			checkFlaw(t, b, fl)
		}
		for range 2 {
			if _, _, err := decodeInto(other, s); err != nil {
				t.Fatal(err)
			}
			s.release()
			got, _, gotErr = decodeInto(b, s)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("%q: with scratch err %v, encoding/json err %v", b, gotErr, wantErr)
			}
			if gotErr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: with scratch %#v, encoding/json %#v", b, got, want)
			}
			s.release()
		}
	})
}

// refFlaws lists the kinds of flaw the valid JSON text b has, found apart
// from the fast parser: keys given twice by walking encoding/json's tokens,
// invalid UTF-8 with utf8.Valid (outside strings JSON is ASCII), lone
// surrogates by reading every \u escape.
func refFlaws(t *testing.T, b []byte) map[flawKind]bool {
	t.Helper()
	out := map[flawKind]bool{}
	if !utf8.Valid(b) {
		out[flawBadUTF8] = true
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // as decodeJSONStd: a number beyond float64 (10E1000) is not a token error
	type frame struct {
		obj   bool
		keys  map[string]bool
		isKey bool // the next token of an object is a key
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.isKey {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					out[flawDuplicate] = true
				}
				top.keys[k] = true
				top.isKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, keys: map[string]bool{}, isKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].isKey = true // a value ended
		}
	}
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\' && i+1 < len(b) && b[i+1] == 'u':
			r := refHex4(b[i+2:])
			i += 5
			if !utf16.IsSurrogate(r) {
				continue
			}
			if r < 0xdc00 && i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
				if r2 := refHex4(b[i+3:]); r2 >= 0xdc00 && r2 <= 0xdfff {
					i += 6
					continue
				}
			}
			out[flawSurrogate] = true
		case c == '\\':
			i++
		}
	}
	return out
}

// checkFlaw fails t unless the fast parser's flaw of the valid JSON text b
// is one b has, and b has none when the parser saw none.
func checkFlaw(t *testing.T, b []byte, fl flaw) {
	t.Helper()
	ref := refFlaws(t, b)
	if fl.kind == flawNone && len(ref) > 0 || fl.kind != flawNone && !ref[fl.kind] {
		t.Fatalf("%q: fast parser's flaw %d at %q, reference %v", b, fl.kind, fl.pointer(), ref)
	}
	if fl.kind != flawNone && fl.pending != 0 {
		t.Fatalf("%q: flaw %d at %q not located up to the root (pending %d)", b, fl.kind, fl.pointer(), fl.pending)
	}
}

// TestDecodeFlaws: the flaws the decoded value cannot show, each with its
// kind, its location as a JSON pointer and its byte offset.
func TestDecodeFlaws(t *testing.T) {
	for _, tc := range []struct {
		in      string
		kind    flawKind
		pointer string
		offset  int
		inKey   bool
	}{
		{`{"a":1}`, flawNone, "", 0, false},
		{`{"a":1,"a":2}`, flawDuplicate, "/a", 7, false},
		{`{"a":1,"A":2}`, flawNone, "", 0, false}, // case-folded keys are the contract's rule, not a flaw of the text
		{`{"x":[0,{"m":{"b":1,"b":2}}]}`, flawDuplicate, "/x/1/m/b", 20, false},
		{`{"a/b~":{"c":1,"c":1}}`, flawDuplicate, "/a~1b~0/c", 15, false},
		{`{"a":{"a":1},"a":2}`, flawDuplicate, "/a", 13, false},
		{"{\"t\":\"ok\",\"title\":\"a\xffb\"}", flawBadUTF8, "/title", 20, false},
		{"{\"m\":{\"k\xfe\":1}}", flawBadUTF8, "/m", 8, true},
		{"[\"\xc3\"]", flawBadUTF8, "/0", 2, false},
		{`{"t":"x\ud800y"}`, flawSurrogate, "/t", 7, false},
		{`{"t":"\udc00\ud800"}`, flawSurrogate, "/t", 6, false},
		{`{"t":"\ud83d\ude00"}`, flawNone, "", 0, false},
		{"{\"a\":\"\xff\",\"a\":1}", flawBadUTF8, "/a", 6, false}, // the first flaw counts
		{`"\ud800"`, flawSurrogate, "", 1, false},
	} {
		_, fl, err := decodeInto([]byte(tc.in), nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if fl.kind != tc.kind || fl.kind != flawNone && (fl.pointer() != tc.pointer || fl.offset != tc.offset || fl.inKey != tc.inKey) {
			t.Errorf("%q: got flaw %d at %q byte %d (key %v), want %d at %q byte %d (key %v)",
				tc.in, fl.kind, fl.pointer(), fl.offset, fl.inKey, tc.kind, tc.pointer, tc.offset, tc.inKey)
		}
		checkFlaw(t, []byte(tc.in), fl)
	}
}

// TestDecodeDepthAsEncodingJSON: the fast parser takes exactly the nesting
// encoding/json takes (10,000 levels), so the contract never accepts a text
// silver's decoder refuses.
func TestDecodeDepthAsEncodingJSON(t *testing.T) {
	for _, n := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		b := []byte(`{"x":` + strings.Repeat("[", n-1) + "1" + strings.Repeat("]", n-1) + "}")
		_, fl, err := decodeInto(b, nil)
		_, stdErr := decodeJSONStd(b)
		if (err == nil) != (stdErr == nil) || err == nil && fl.kind == flawUnchecked {
			t.Errorf("%d levels: fast err %v (flaw %d), encoding/json err %v", n, err, fl.kind, stdErr)
		}
		if want := n <= maxDepth; (err == nil) != want {
			t.Errorf("%d levels: accepted %v, want %v", n, err == nil, want)
		}
	}
}

// refHex4 reads four hex digits for the reference (-1 if there are not four).
func refHex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	if err != nil {
		return -1
	}
	return rune(v)
}
