package jsonlex

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

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

// FuzzLexerAgreesWithEncodingJSON: Skip accepts exactly the single JSON
// values encoding/json accepts (the decoder's own fuzz target compares the
// values; this one the lexer's verdict), and a string String accepts
// unquotes to encoding/json's value.
func FuzzLexerAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,-0,true,false,null,"x\u00e9\n"]}`, `"\ud800"`, `"\q"`, `[1,]`, `01`,
		`"a\u0041b"`, "\"\xff\"", `{"a" 1}`, ` [ ] `, `-`, `1e+`, `"\u12"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l := Lexer{B: b}
		l.Space()
		ok := l.Skip(10000)
		if ok {
			l.Space()
			ok = !l.More()
		}
		if want := json.Valid(b); ok != want {
			t.Fatalf("%q: Skip says %v, encoding/json says %v", b, ok, want)
		}
		l = Lexer{B: b}
		body, escaped, bad, sok := l.String()
		if !sok || l.More() {
			return
		}
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%q: String accepts it, encoding/json says %v", b, err)
		}
		got := string(body)
		if escaped || bad >= 0 {
			out, _, ok := Unquote(nil, body)
			if !ok {
				t.Fatalf("%q: String accepts it, Unquote refuses it", b)
			}
			got = string(out)
		}
		if got != want {
			t.Fatalf("%q: got %q, encoding/json %q", b, got, want)
		}
	})
}
