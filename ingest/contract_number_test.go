package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"lakehouse/ingest/replay"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// contractPair is the contract compiled twice: plain (the library's own
// keywords only) and fast (the number keyword), the one NewContract uses.
type contractPair struct{ plain, fast *Contract }

var (
	pairOnce sync.Once
	pair     contractPair
	pairErr  error
)

func bothContracts(t testing.TB) contractPair {
	t.Helper()
	pairOnce.Do(func() {
		if pair.plain, pairErr = compileContract(false); pairErr != nil {
			return
		}
		pair.fast, pairErr = compileContract(true)
	})
	if pairErr != nil {
		t.Fatal(pairErr)
	}
	return pair
}

// leaves lists the leaf errors of a validation result, each as schema
// location, keyword and message, sorted (the library's order follows map
// iteration and is not stable).
func leaves(err error) []string {
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{"not a validation error: " + err.Error()}
	}
	var out []string
	eachLeaf(ve, func(e *jsonschema.ValidationError, msg string) {
		out = append(out, fmt.Sprintf("%s %v: %s", e.SchemaURL, e.ErrorKind.KeywordPath(), msg))
	})
	slices.Sort(out)
	return out
}

// sameVerdict validates doc with both compiles and fails t on any
// difference: valid or not, and the same leaf errors (schema location,
// keyword, instance location and message).
func (p contractPair) sameVerdict(t testing.TB, name string, doc any) {
	t.Helper()
	want := leaves(p.plain.schema.Validate(doc))
	got := leaves(p.fast.schema.Validate(doc))
	if !slices.Equal(got, want) {
		t.Errorf("%s: fast contract got %q, plain library contract want %q", name, got, want)
	}
}

// sameCheck runs Check (decoder, validation, routing fields) with both.
func (p contractPair) sameCheck(t testing.TB, name string, raw []byte) {
	t.Helper()
	wantEv, wantErr := p.plain.Check(raw)
	gotEv, gotErr := p.fast.Check(raw)
	if (gotErr == nil) != (wantErr == nil) || gotEv != wantEv {
		t.Fatalf("%s: fast Check got (%+v, %v), plain want (%+v, %v)", name, gotEv, gotErr, wantEv, wantErr)
	}
	if gotErr != nil {
		for _, class := range []error{ErrNotJSON, ErrContract} {
			if errors.Is(gotErr, class) != errors.Is(wantErr, class) {
				t.Errorf("%s: fast error %v, plain %v: not the same class", name, gotErr, wantErr)
			}
		}
		g, w := strings.Split(gotErr.Error(), "; "), strings.Split(wantErr.Error(), "; ")
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			t.Errorf("%s: fast reason %q, plain reason %q", name, gotErr, wantErr)
		}
	}
	if doc, err := decodeJSON(raw); err == nil {
		p.sameVerdict(t, name, doc)
	}
}

// integerFields are where the schemas ask for integers, as paths.
var integerFields = [][]string{
	{"timestamp"}, {"namespace"}, {"id"}, {"log_id"},
	{"revision", "new"}, {"revision", "old"}, {"length", "new"}, {"length", "old"},
}

// numberEdgeCases are JSON texts put into every integer field. Integers,
// integers by the big.Rat rule only (1.0, 1e3), fractions, the bounds of
// minimum/maximum (+-(2^53-1)) and just past them, huge literals and
// non-numbers.
var numberEdgeCases = []string{
	`1`, `-0`, `0`, `-1`, `1.0`, `1.5`, `1e3`, `1E3`, `1e+3`, `1E-2`, `1e-0`, `1.0e0`, `-1.0E+0`, `0.0`, `-0.0`, `10e-1`, `1e400`, `1e-400`,
	`12345678901234567890`, `-12345678901234567890`, `123456789012345678901234567890`,
	`9007199254740991`, `9007199254740992`, `-9007199254740991`, `-9007199254740992`,
	`9007199254740991.0`, `9007199254740991.5`, `9.007199254740991e15`, `9.007199254740992e15`, `-9.007199254740992E15`,
	`999999999999999999`, `-999999999999999999`, `9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`,
	`null`, `"1"`, `""`, `true`, `false`, `[]`, `[1]`, `{}`, `{"new":1}`,
}

// withValue returns base with the value at path replaced by the JSON text
// lit (an object on the way is created).
func withValue(base []byte, path []string, lit string) []byte {
	m := mustDecodeObject(base)
	obj := m
	for _, k := range path[:len(path)-1] {
		next, ok := obj[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[k] = next
		}
		obj = next
	}
	obj[path[len(path)-1]] = json.RawMessage(lit)
	return encodeCompact(m)
}

// TestFastNumbersSameVerdict: the contract NewContract compiles (integer
// types and bounds checked by the number keyword) and the plain library
// compile of the same embedded schemas agree on every input: the 50 real
// events, generated events, the broken-event table, Violate's breakages and
// every number edge case in every integer field of every event type.
func TestFastNumbersSameVerdict(t *testing.T) {
	p := bothContracts(t)
	sample := readSample(t)
	for i, raw := range sample.Events {
		p.sameCheck(t, fmt.Sprintf("sample %d", i), raw)
	}
	gen := replay.Generate(11, 2000)
	for i, raw := range gen.Events {
		p.sameCheck(t, fmt.Sprintf("generated %d", i), raw)
		p.sameCheck(t, fmt.Sprintf("violated %d (%s)", i, replay.ViolationKinds[i%len(replay.ViolationKinds)]), replay.Violate(raw, i))
	}
	for _, tc := range brokenEvents(t) {
		p.sameCheck(t, "broken: "+tc.name, tc.raw)
	}
	// One event of each type, so the contract's if/then (edit, new) runs
	// both ways.
	bases := map[string][]byte{}
	for _, raw := range gen.Events {
		typ, _ := mustDecodeObject(raw)["type"].(string)
		if _, ok := bases[typ]; !ok {
			bases[typ] = raw
		}
	}
	if len(bases) < 4 {
		t.Fatalf("event types in the generated events: got %d, want >= 4", len(bases))
	}
	n := 0
	for typ, base := range bases {
		for _, path := range integerFields {
			for _, lit := range numberEdgeCases {
				p.sameCheck(t, fmt.Sprintf("%s %s=%s", typ, strings.Join(path, "."), lit), withValue(base, path, lit))
				n++
			}
		}
	}
	t.Logf("%d number edge cases in %d event types agree", n, len(bases))
}

// TestFastNumbersGoValues: values that are not from the decoder (Go ints
// and floats, as a caller of the library might pass) get the same verdict
// too; those take the library's exact rule.
func TestFastNumbersGoValues(t *testing.T) {
	p := bothContracts(t)
	base := mustDecodeObject(readSample(t).Events[0])
	for _, v := range []any{
		0, -1, int8(-8), int16(16), int32(-32), int64(math.MaxInt64), int64(math.MinInt64), uint(7), uint8(8), uint16(16), uint32(32), uint64(math.MaxUint64),
		1.0, 1.5, math.Copysign(0, -1), 1e3, 1e-2, float32(2), float32(2.5), 9007199254740991.0, 9007199254740992.0, -9007199254740992.0, 1e300, math.MaxFloat64, math.SmallestNonzeroFloat64,
		json.Number("1"), json.Number("1.0"), json.Number("1e3"), json.Number("1.5"), json.Number("+1"), json.Number("007"), json.Number("1e-2"),
	} {
		for _, k := range []string{"timestamp", "namespace", "id"} {
			doc := cloneObject(base)
			doc[k] = v
			p.sameVerdict(t, fmt.Sprintf("%s=%T(%v)", k, v, v), doc)
		}
	}
}

// TestFastNumbersTransform: the transform touches only what it may, and the
// embedded upstream schema has the expected integer subschemas rewritten.
func TestFastNumbersTransform(t *testing.T) {
	doc := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"a":    map[string]any{"type": "integer", "description": "x", "minimum": json.Number("0")},
			"b":    map[string]any{"type": []any{"integer", "null"}},
			"c":    map[string]any{"type": "integer", "enum": []any{json.Number("1")}}, // other keyword: left alone
			"d":    map[string]any{"type": "number", "minimum": json.Number("0")},      // no integer: left alone
			"type": map[string]any{"type": "integer"},                                  // a property named "type"
		},
		"examples": []any{map[string]any{"type": "integer"}}, // instance data: never touched
		"items":    []any{map[string]any{"type": "integer"}},
		"allOf":    []any{map[string]any{"if": map[string]any{"type": "integer"}}},
	}
	fastNumbers(doc)
	got := string(encodeCompact(doc))
	want := `{"allOf":[{"if":{"x-lakehouse-number":{"type":"integer"}}}],"examples":[{"type":"integer"}],"items":[{"x-lakehouse-number":{"type":"integer"}}],` +
		`"properties":{"a":{"description":"x","x-lakehouse-number":{"minimum":0,"type":"integer"}},"b":{"x-lakehouse-number":{"type":["integer","null"]}},` +
		`"c":{"enum":[1],"type":"integer"},"d":{"minimum":0,"type":"number"},"type":{"x-lakehouse-number":{"type":"integer"}}},"type":"object"}`
	if got != want {
		t.Errorf("transformed:\n got %s\nwant %s", got, want)
	}

	b, err := schemaFS.ReadFile("schema/mediawiki-recentchange-1.0.1.json")
	if err != nil {
		t.Fatal(err)
	}
	up, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	fastNumbers(up)
	var rewritten []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if _, ok := m[numberKeyword]; ok {
			rewritten = append(rewritten, path)
			if _, ok := m["type"]; ok {
				t.Errorf("%s: type kept next to %s", path, numberKeyword)
			}
		}
		for k, c := range m {
			walk(path+"/"+k, c)
		}
	}
	walk("", up)
	slices.Sort(rewritten)
	wantPaths := []string{"/properties/id", "/properties/length/properties/new", "/properties/length/properties/old", "/properties/log_id",
		"/properties/namespace", "/properties/revision/properties/new", "/properties/revision/properties/old", "/properties/timestamp"}
	if !slices.Equal(rewritten, wantPaths) {
		t.Errorf("rewritten subschemas: got %q, want %q", rewritten, wantPaths)
	}
}

// FuzzFastNumbersSameVerdict puts arbitrary number text into an integer
// field (and arbitrary bytes through Check) and compares the two compiles.
func FuzzFastNumbersSameVerdict(f *testing.F) {
	sample := readSample(f)
	for i, lit := range numberEdgeCases {
		f.Add(uint8(i), lit)
	}
	f.Fuzz(func(t *testing.T, field uint8, lit string) {
		p := bothContracts(t)
		base := sample.Events[int(field)%sample.Len()]
		path := integerFields[int(field)%len(integerFields)]
		if !json.Valid([]byte(lit)) {
			// Not a JSON value: the event as text, broken or not.
			raw := strings.Replace(string(base), `"timestamp": `, `"timestamp": `+lit+`, "x": `, 1)
			p.sameCheck(t, "raw", []byte(raw))
			return
		}
		p.sameCheck(t, strings.Join(path, ".")+"="+lit, withValue(base, path, lit))
	})
}
