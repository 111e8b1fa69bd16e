package ingest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"lakehouse/ingest/replay"
)

// acceptorOracle checks one document: the acceptor may pass it only when
// the library (the plain compile, no number keyword) finds it valid. It
// returns whether the acceptor passed it.
func acceptorOracle(t testing.TB, name string, raw []byte) bool {
	t.Helper()
	p := bothContracts(t)
	doc, err := decodeJSON(raw)
	if err != nil {
		return false
	}
	passed := p.fast.accept.valid(doc)
	if libErr := p.plain.schema.Validate(doc); passed && libErr != nil {
		t.Errorf("%s: the acceptor passed a document the library refuses: %v", name, libErr)
	}
	return passed
}

// acceptFields are the members of an event, as paths, that the fuzz target
// and the edge cases put other values into: every member the two schemas
// name and one they do not.
var acceptFields = [][]string{
	{"$schema"}, {"meta"}, {"meta", "id"}, {"meta", "dt"}, {"meta", "domain"}, {"meta", "stream"},
	{"meta", "uri"}, {"meta", "request_id"}, {"meta", "topic"}, {"meta", "partition"}, {"meta", "offset"},
	{"type"}, {"timestamp"}, {"wiki"}, {"user"}, {"title"}, {"namespace"}, {"id"}, {"bot"},
	{"server_name"}, {"server_url"}, {"server_script_path"}, {"comment"}, {"parsedcomment"},
	{"minor"}, {"patrolled"}, {"log_id"}, {"log_type"}, {"log_action"}, {"log_params"},
	{"log_action_comment"}, {"revision"}, {"revision", "new"}, {"revision", "old"},
	{"length"}, {"length", "new"}, {"length", "old"}, {"title_url"}, {"notify_url"}, {"x-extra"},
}

// acceptEdgeValues are JSON texts put into every field of acceptFields.
var acceptEdgeValues = []string{
	`null`, `true`, `false`, `0`, `-1`, `1.0`, `1e3`, `12345678901234567890`, `9007199254740992`,
	`""`, `"x"`, `"edit"`, `"new"`, `"log"`, `"vandalism"`, `"EDIT"`,
	`"2026-02-26T15:49:33Z"`, `"2026-02-26 15:49:33"`, `"63d9586d-899f-4d33-b8a7-2c5a0f0ad0f6"`, `"not-a-uuid"`,
	`"https://en.wikipedia.org/wiki/X"`, `"::not a uri"`, `"` + strings.Repeat("é", 300) + `"`,
	`[]`, `[1,"a"]`, `{}`, `{"new":1}`, `{"new":1,"old":null}`, `{"new":"1"}`, `{"id":"x"}`,
}

// TestAcceptorSameVerdict: the acceptor passes no document the library
// refuses, over the 50 real events, 2,000 generated ones and their
// violations, the broken-event table, and every edge value in every member
// of one event of each type; and it passes every valid real and generated
// event, so the library runs only for violations on the real mix (the fast
// path is the one taken, not a fallback that always defers).
func TestAcceptorSameVerdict(t *testing.T) {
	p := bothContracts(t)
	if p.fast.accept == nil || p.plain.accept != nil {
		t.Fatal("want the acceptor in the fast contract only")
	}
	valid, passed := 0, 0
	count := func(name string, raw []byte) {
		ok := acceptorOracle(t, name, raw)
		if doc, err := decodeJSON(raw); err == nil && p.plain.schema.Validate(doc) == nil {
			valid++
			if ok {
				passed++
			} else {
				t.Errorf("%s: valid, but the acceptor left it to the library", name)
			}
		}
	}
	for i, raw := range readSample(t).Events {
		count(fmt.Sprintf("sample %d", i), raw)
	}
	gen := replay.Generate(12, 2000)
	for i, raw := range gen.Events {
		count(fmt.Sprintf("generated %d", i), raw)
		acceptorOracle(t, fmt.Sprintf("violated %d", i), replay.Violate(raw, i))
	}
	for _, tc := range brokenEvents(t) {
		acceptorOracle(t, "broken: "+tc.name, tc.raw)
	}
	if valid < 2000 || passed != valid {
		t.Fatalf("valid events %d, passed by the acceptor %d: want all of at least 2,000", valid, passed)
	}
	bases := typeBases(gen)
	edges, edgePassed := edgeCases(bases, func(name string, raw []byte) bool { return acceptorOracle(t, name, raw) })
	t.Logf("%d of %d valid events passed by the acceptor; %d of %d edge cases in %d event types passed, none the library refuses",
		passed, valid, edgePassed, edges, len(bases))
	if edgePassed == 0 || edgePassed == edges {
		t.Fatalf("edge cases passed %d of %d: want some passed and some left to the library", edgePassed, edges)
	}
}

// TestAcceptorLeavesOtherKeywordsToTheLibrary: a schema with a keyword the
// acceptor does not check is never passed by it, and draft 7's $ref hides
// the keywords beside it as in the library.
func TestAcceptorLeavesOtherKeywordsToTheLibrary(t *testing.T) {
	cases := []struct {
		schema string
		value  string
		want   verdict
	}{
		{`{"anyOf": [{"type": "string"}, {"type": "integer"}]}`, `"a"`, vUnsure},
		{`{"pattern": "^a"}`, `"a"`, vUnsure},
		{`{"const": "a"}`, `"a"`, vUnsure},
		{`{"not": {"type": "integer"}}`, `"a"`, vUnsure},
		{`{"enum": ["a", 1]}`, `"a"`, vUnsure},
		{`{"type": "integer"}`, `1.0`, vUnsure},
		{`{"type": "integer"}`, `1`, vValid},
		{`{"type": "integer"}`, `"1"`, vInvalid},
		{`{"maximum": 1.5}`, `1`, vUnsure},
		{`{"maximum": 2}`, `3`, vInvalid},
		{`{"properties": {"a": {"pattern": "x"}}, "required": ["b"]}`, `{"a": "y"}`, vInvalid},
		{`{"properties": {"a": {"pattern": "x"}}}`, `{"a": "y"}`, vUnsure},
		{`{"additionalProperties": false, "properties": {"a": true}}`, `{"a": 1, "b": 2}`, vInvalid},
		{`{"if": {"pattern": "x"}, "then": false}`, `"y"`, vUnsure},
		{`{"if": {"type": "string"}, "then": {"minLength": 2}, "else": false}`, `"é"`, vInvalid},
		{`{"if": {"type": "string"}, "then": {"minLength": 2}, "else": false}`, `"éé"`, vValid},
		{`{"if": {"type": "string"}, "then": {"minLength": 2}, "else": false}`, `3`, vInvalid},
		{`{"$ref": "#/definitions/s", "minLength": 5, "definitions": {"s": {"type": "string"}}}`, `"ab"`, vValid},
	}
	for _, tc := range cases {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft7)
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource("mem:///s.json", doc); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile("mem:///s.json")
		if err != nil {
			t.Fatal(err)
		}
		a, err := compileAcceptor(sch)
		if err != nil {
			t.Fatal(err)
		}
		v, err := decodeJSON([]byte(tc.value))
		if err != nil {
			t.Fatal(err)
		}
		got := a.check(v, 0)
		if got != tc.want {
			t.Errorf("%s on %s: got verdict %d, want %d", tc.schema, tc.value, got, tc.want)
		}
		if libErr := sch.Validate(v); (got == vValid && libErr != nil) || (got == vInvalid && libErr == nil) {
			t.Errorf("%s on %s: verdict %d, library says %v", tc.schema, tc.value, got, libErr)
		}
	}
}

// FuzzAcceptorSameVerdict puts arbitrary JSON into a member of a real event
// (or arbitrary text in place of one) and checks the acceptor passes it
// only when the library does; Check with and without the acceptor must
// give the same result and reason.
func FuzzAcceptorSameVerdict(f *testing.F) {
	sample := readSample(f)
	for i, lit := range acceptEdgeValues {
		f.Add(uint8(i), lit)
	}
	f.Fuzz(func(t *testing.T, field uint8, lit string) {
		base := sample.Events[int(field)%sample.Len()]
		path := acceptFields[int(field)%len(acceptFields)]
		raw := []byte(strings.Replace(string(base), `"wiki": `, `"wiki": `+lit+`, "x": `, 1))
		if json.Valid([]byte(lit)) {
			raw = withValue(base, path, lit)
		}
		acceptorOracle(t, strings.Join(path, ".")+"="+lit, raw)
		bothContracts(t).sameCheck(t, strings.Join(path, ".")+"="+lit, raw)
	})
}

// typeBases returns the first event of each type in rec.
func typeBases(rec replay.Recording) map[string][]byte {
	bases := map[string][]byte{}
	for _, raw := range rec.Events {
		typ, _ := mustDecodeObject(raw)["type"].(string)
		if _, ok := bases[typ]; !ok {
			bases[typ] = raw
		}
	}
	return bases
}

// edgeCases calls check with every edge value in every member of each base
// event; it returns how many cases there were and how many check passed.
func edgeCases(bases map[string][]byte, check func(name string, raw []byte) bool) (n, passed int) {
	for typ, base := range bases {
		for _, path := range acceptFields {
			for _, lit := range acceptEdgeValues {
				if check(fmt.Sprintf("%s %s=%s", typ, strings.Join(path, "."), lit), withValue(base, path, lit)) {
					passed++
				}
				n++
			}
		}
	}
	return n, passed
}
