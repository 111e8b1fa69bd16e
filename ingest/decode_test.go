package ingest

import (
	"reflect"
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
		`"\ud800"`, "\"\xff\"", "\"a\tb\"", `"\x"`, `{"a":1}{}`, `{"a" 1}`, `nul`, `truex`, ` [true , false,null ] `, `{"a":{"a":1},"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gotErr := decodeJSON(b)
		want, wantErr := decodeJSONStd(b)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: fast err %v, encoding/json err %v", b, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast %#v, encoding/json %#v", b, got, want)
		}
	})
}
