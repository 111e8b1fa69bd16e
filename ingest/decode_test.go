package ingest

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeJSON checks the fast decoder against encoding/json: the same
// verdict on every input and the same value when both accept.
func FuzzDecodeJSON(f *testing.F) {
	for _, e := range readSample(f).Events {
		f.Add(e)
	}
	for i, e := range Generate(4, len(ViolationKinds)).Events {
		f.Add(Violate(e, i))
	}
	for _, s := range []string{``, ` `, `{}`, `[]`, `[1,]`, `{"a":1,}`, `01`, `-0`, `-`, `1e`, `1.`, `.5`, `1E+2`, `"\u00e9\ud83d\ude00"`,
		`"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud83d\ude00x"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\'"`, `"\u12"`, `"\u12g4"`, `"\u00E9\u00e9"`, "\"\xff\"", "\"a\\n\xc3\"", "\"a\tb\"", `"\x"`, `{"a":1}{}`, `{"a" 1}`, `nul`, `truex`, ` [true , false,null ] `, `{"a":{"a":1},"a":2}`} {
		f.Add([]byte(s))
	}
	// More escaped text than a scratch's arena holds.
	f.Add([]byte(`{"a":[` + strings.Repeat("\"\\u00e9\\n\\\"\xff\",", 3000) + `"end"],"b":"\t"}`))
	// A scratch that always holds the maps and slices of another document,
	// as in Contract.Check.
	s := newDocScratch()
	other := readSample(f).Events[1]
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gotErr := decodeJSON(b)
		want, wantErr := decodeJSONStd(b)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: fast err %v, encoding/json err %v", b, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast %#v, encoding/json %#v", b, got, want)
		}
		for range 2 {
			if _, err := decodeInto(other, s); err != nil {
				t.Fatal(err)
			}
			s.release()
			got, gotErr = decodeInto(b, s)
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

// TestSkipPlain compares the eight-bytes-at-a-time scan with a byte loop
// on random bytes from an alphabet rich in the bytes it must stop at.
func TestSkipPlain(t *testing.T) {
	alphabet := []byte("ab~ \x1f\x20\x21\"#[\\]\x7f\x80\xc3\xa9\xff\x00\n")
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 5000 {
		b := make([]byte, rng.IntN(40))
		for j := range b {
			if rng.IntN(4) == 0 {
				b[j] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[j] = 'a' + byte(rng.IntN(26))
			}
		}
		for i := 0; i <= len(b); i++ {
			want := i
			for want < len(b) && b[want] >= 0x20 && b[want] < 0x80 && b[want] != '"' && b[want] != '\\' {
				want++
			}
			if got := skipPlain(b, i); got != want {
				t.Fatalf("case %d: skipPlain(%q, %d) = %d, want %d", n, b, i, got, want)
			}
		}
	}
}
