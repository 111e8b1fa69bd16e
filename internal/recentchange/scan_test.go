package recentchange

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// checkScan fails t if scanEvent accepts raw with a result other than
// encoding/json's. It reports whether the fast path accepted raw.
func checkScan(t *testing.T, raw []byte) bool {
	t.Helper()
	var fast rawEvent
	if !scanEvent(raw, &fast) {
		return false
	}
	var ref rawEvent
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatalf("scanEvent accepted what encoding/json refuses (%v): %q", err, raw)
	}
	fast.seen = 0
	for _, o := range []*oldNew{fast.Length, fast.Revision} {
		if o != nil {
			o.seen = 0
		}
	}
	if !reflect.DeepEqual(fast, ref) {
		got, _ := json.Marshal(fast)
		want, _ := json.Marshal(ref)
		t.Fatalf("scanEvent of %q:\n got %s\nwant %s", raw, got, want)
	}
	return true
}

// scanCases are inputs where encoding/json's rules are easy to get wrong.
var scanCases = []string{
	`{"type":"edit"}`,
	` {"type" : "edit" , "meta" : {"id":"x","dt":"2026-01-01T00:00:00Z"}} `,
	`{"type":null,"meta":{"id":null}}`,
	`{"meta":null}`,
	`{"TYPE":"edit"}`,
	`{"Type":"edit","type":"new"}`,
	`{"type":"edit","type":"new"}`,
	`{"meta":{"id":"a"},"meta":{"dt":"b"}}`,
	`{"length":{"old":1},"length":{"new":2}}`,
	`{"ſerver_name":"x"}`,
	`{"\u0074ype":"edit"}`,
	`{"title":"a\"b\\c\/d\u00e9\ud83d\ude00"}`,
	`{"title":"lone \ud800 surrogate"}`,
	"{\"title\":\"bad utf8 \xff\"}",
	"{\"other\":\"bad utf8 \xff\"}",
	"{\"title\":\"tab\tinside\"}",
	`{"namespace":2147483647}`,
	`{"namespace":2147483648}`,
	`{"namespace":-0}`,
	`{"namespace":1.0}`,
	`{"namespace":1e2}`,
	`{"namespace":"1"}`,
	`{"namespace":null}`,
	`{"timestamp":9223372036854775807}`,
	`{"timestamp":9223372036854775808}`,
	`{"timestamp":01}`,
	`{"bot":true,"minor":false}`,
	`{"bot":null,"minor":1}`,
	`{"length":null,"revision":{"old":null,"new":5}}`,
	`{"length":{"OLD":1}}`,
	`{"log_params":{"a":[1,2,{"b":[true,false,null,-1.5e-3,"s"]}],"c":{}},"d":[]}`,
	`{"x":[1,]}`,
	`{"x":{"a":1,}}`,
	`{"x":tru}`,
	`{"x":-}`,
	`{"x":1.}`,
	`{"x":"\x"}`,
	`{"x":"\u12"}`,
	`{"type":"edit"} x`,
	`{"type":"edit"}{}`,
	`[]`,
	``,
	`{`,
	`{"a"}`,
	`{"a":1 "b":2}`,
	strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70),
}

func TestScanEventMatchesEncodingJSON(t *testing.T) {
	accepted := 0
	for _, raw := range sampleEvents(t) {
		if !checkScan(t, raw) {
			t.Errorf("the fast path refused a real event: %s", raw)
		}
		accepted++
	}
	for _, c := range scanCases {
		if checkScan(t, []byte(c)) {
			accepted++
		}
	}
	if accepted < 60 {
		t.Fatalf("inconclusive: the fast path accepted only %d inputs", accepted)
	}
}

// TestParseEditSameWithoutFastPath: ParseEdit gives the same edits and
// errors on the real events and the edge cases whichever path decodes.
func TestParseEditSameWithoutFastPath(t *testing.T) {
	inputs := sampleEvents(t)
	for _, c := range scanCases {
		inputs = append(inputs, []byte(c))
	}
	for _, raw := range inputs {
		got, gotErr := ParseEdit(raw, time.Time{}, DefaultMaxAhead)
		want, wantErr := parseEditReference(raw)
		if !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) ||
			gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("ParseEdit(%q):\n got %+v, %v\nwant %+v, %v", raw, got, gotErr, want, wantErr)
		}
	}
}

// parseEditReference is ParseEdit with encoding/json only.
func parseEditReference(raw []byte) (Edit, error) {
	var ev rawEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return Edit{}, fmt.Errorf("decode event: %w", err)
	}
	return editOf(&ev, time.Time{}, DefaultMaxAhead)
}

func FuzzScanEventMatchesEncodingJSON(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	for _, raw := range sampleEvents(f) {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkScan(t, raw) })
}
