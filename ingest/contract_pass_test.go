package ingest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"lakehouse/ingest/replay"
)

// passOracle checks the single pass on one input against the decoded path
// of the same contract (and, through sameCheck, against the library alone):
// when the pass passes raw, the decoded path must pass it too and return
// the same Event. It returns whether the pass passed it.
func passOracle(t testing.TB, name string, raw []byte, received time.Time) bool {
	t.Helper()
	p := bothContracts(t)
	decoded := *p.fast
	decoded.plan = nil
	ev, ok := p.fast.pass(raw, received)
	want, err := decoded.CheckAt(raw, received)
	if ok && (err != nil || ev != want) {
		t.Errorf("%s: the single pass passed it as %+v; the decoded path gives (%+v, %v)", name, ev, want, err)
	}
	return ok
}

// passTexts are whole events whose text is the point: escapes, flaws,
// keys silver reads ignoring case, nesting.
func passTexts(t *testing.T, base []byte) map[string][]byte {
	s := string(base)
	at := func(old, new string) []byte {
		if !strings.Contains(s, old) {
			t.Fatalf("base event has no %q", old)
		}
		return []byte(strings.Replace(s, old, new, 1))
	}
	return map[string][]byte{
		"escaped value":            at(`"wiki":"`, `"wiki":"\u0065n\"`),
		"escaped key":              at(`"wiki":`, `"wik\u0069":`),
		"escaped meta.id key":      at(`"id":"`, `"\u0069d":"`),
		"escaped solidus in uri":   at(`"uri":"https:`, `"uri":"https:\/`),
		"duplicate key":            at(`"wiki":`, `"wiki":"x","wiki":`),
		"duplicate unnamed key":    at(`"wiki":`, `"x-a":1,"x-a":2,"wiki":`),
		"duplicate meta key":       at(`"domain":`, `"domain":"x","domain":`),
		"folded key":               at(`"wiki":`, `"TYPE":"edit","wiki":`),
		"folded meta key":          at(`"domain":`, `"DT":"x","domain":`),
		"kelvin key":               at(`"wiki":`, `"\u212aey":1,"wiki":`),
		"folded with Kelvin sign":  at(`"wiki":`, `"ti\u212a":1,"wiki":`),
		"invalid utf-8":            at(`"wiki":"`, "\"wiki\":\"\xff"),
		"invalid utf-8 key":        at(`"wiki":`, "\"w\xffiki\":1,\"wiki\":"),
		"lone surrogate":           at(`"wiki":"`, `"wiki":"\ud800`),
		"surrogate pair":           at(`"wiki":"`, `"wiki":"\ud83d\ude00`),
		"nested extra":             at(`"wiki":`, `"x-deep":{"a":[{"b":[1,{"c":null}]}],"d":{}},"wiki":`),
		"nested dup":               at(`"wiki":`, `"x-deep":{"a":1,"a":2},"wiki":`),
		"array dup":                at(`"wiki":`, `"x-deep":[{"a":1,"a":2}],"wiki":`),
		"deep":                     at(`"wiki":`, `"x-deep":`+strings.Repeat("[", 80)+strings.Repeat("]", 80)+`,"wiki":`),
		"trailing garbage":         []byte(s + "x"),
		"trailing space":           []byte(s + " \n"),
		"leading space":            []byte("\t " + s),
		"truncated":                base[:len(base)/2],
		"bad literal":              at(`"wiki":`, `"x":tru,"wiki":`),
		"control char":             at(`"wiki":"`, "\"wiki\":\"\x01"),
		"namespace beyond int32":   at(`"namespace":`, `"namespace":2147483648,"x-n":`),
		"timestamp with exponent":  at(`"timestamp":`, `"timestamp":1e9,"x-t":`),
		"timestamp fraction":       at(`"timestamp":`, `"timestamp":1.5,"x-t":`),
		"meta.dt not RFC 3339":     at(`"dt":"`, `"dt":"2026-02-26 `),
		"empty object member":      at(`"wiki":`, `"x-e":{},"wiki":`),
		"null revision old":        at(`"wiki":`, `"x-r":null,"wiki":`),
		"many unnamed keys":        at(`"wiki":`, manyKeys(70)+`"wiki":`),
		"many unnamed keys, a dup": at(`"wiki":`, manyKeys(70)+`"k3":1,"wiki":`),
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	return b.String()
}

// TestSinglePassSameResult: the single pass passes no input the decoded
// path refuses and returns the decoded path's Event for each it passes,
// over the 50 real events, 2,000 generated ones and their violations, the
// broken-event table, every edge value in every member of one event of
// each type, the text cases (escapes, flaws, folded keys, nesting), and
// times checked against an intake time; and it passes every valid real and
// generated event, so the decoded path runs only for what it leaves (the
// single pass is the one taken, not a fallback that always defers).
func TestSinglePassSameResult(t *testing.T) {
	p := bothContracts(t)
	if p.fast.plan == nil || p.plain.plan != nil {
		t.Fatal("want the single pass in the fast contract only")
	}
	valid, passed := 0, 0
	count := func(name string, raw []byte, received time.Time) {
		ok := passOracle(t, name, raw, received)
		p.sameCheck(t, name, raw)
		if _, err := p.plain.CheckAt(raw, received); err == nil {
			valid++
			if ok {
				passed++
			} else {
				t.Errorf("%s: valid, but the single pass left it to the decoded path", name)
			}
		}
	}
	sample := readSample(t)
	for i, raw := range sample.Events {
		count(fmt.Sprintf("sample %d", i), raw, time.Time{})
	}
	gen := replay.Generate(12, 2000)
	for i, raw := range gen.Events {
		count(fmt.Sprintf("generated %d", i), raw, time.Time{})
		passOracle(t, fmt.Sprintf("violated %d", i), replay.Violate(raw, i), time.Time{})
	}
	if valid < 2000 || passed != valid {
		t.Fatalf("valid events %d, passed by the single pass %d: want all of at least 2,000", valid, passed)
	}
	for _, tc := range brokenEvents(t) {
		passOracle(t, "broken: "+tc.name, tc.raw, time.Time{})
	}
	// The time rules: the same events received long after, just after, and
	// before they happened.
	for i, raw := range sample.Events[:10] {
		dt := mustDecodeObject(raw)["meta"].(map[string]any)["dt"].(string)
		at, err := time.Parse(time.RFC3339, dt)
		if err != nil {
			t.Fatal(err)
		}
		for _, received := range []time.Time{at.Add(time.Hour), at.Add(time.Second), at.Add(-time.Hour)} {
			passOracle(t, fmt.Sprintf("sample %d received %s", i, received), raw, received)
		}
	}
	bases := typeBases(gen)
	edges, edgePassed := edgeCases(bases, func(name string, raw []byte) bool { return passOracle(t, name, raw, time.Time{}) })
	texts, textPassed := 0, 0
	compact := encodeCompact(mustDecodeObject(bases["edit"]))
	compact = bytes.TrimSpace(compact)
	for name, raw := range passTexts(t, compact) {
		ok := passOracle(t, name, raw, time.Time{})
		if ok {
			textPassed++
		}
		// Nesting beyond the acceptor's depth limit is the decoded path's
		// by design; every other valid text is the single pass's.
		if _, err := p.plain.Check(raw); err == nil && !ok && name != "deep" {
			t.Errorf("%s: valid, but the single pass left it to the decoded path", name)
		}
		p.sameCheck(t, name, raw)
		texts++
	}
	t.Logf("%d of %d valid events passed by the single pass; edge cases %d of %d passed, text cases %d of %d, none the decoded path refuses",
		passed, valid, edgePassed, edges, textPassed, texts)
	if edgePassed == 0 || edgePassed == edges || textPassed == 0 || textPassed == texts {
		t.Fatalf("edge cases passed %d of %d, text cases %d of %d: want some passed and some left to the decoded path", edgePassed, edges, textPassed, texts)
	}
}

// FuzzSinglePassSameResult: on arbitrary bytes (seeded with real events,
// the broken-event table and the text cases) the single pass passes
// nothing the decoded path refuses, and returns its Event.
func FuzzSinglePassSameResult(f *testing.F) {
	sample := readSample(f)
	for _, raw := range sample.Events[:10] {
		f.Add(raw)
	}
	base := encodeCompact(mustDecodeObject(sample.Events[0]))
	f.Add(base)
	f.Add([]byte(strings.Replace(string(base), `"wiki":`, `"wiki":1,"wiki":`, 1)))
	f.Add([]byte(strings.Replace(string(base), `"wiki":`, `"WIKI":1,"\u0074ype":"x","wiki":`, 1)))
	f.Fuzz(func(t *testing.T, raw []byte) {
		passOracle(t, fmt.Sprintf("%q", raw), raw, time.Time{})
	})
}
