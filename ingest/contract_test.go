package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest/replay"
)

func readSample(t testing.TB) replay.Recording {
	t.Helper()
	return replay.Sample()
}

func TestSampleEventsPassContract(t *testing.T) {
	rec := readSample(t)
	if got, want := rec.Len(), 50; got != want {
		t.Fatalf("sample events: got %d, want %d", got, want)
	}
	c, err := NewContract()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	for i, raw := range rec.Events {
		ev, err := c.Check(raw)
		if err != nil {
			t.Errorf("event %d: %v", i, err)
			continue
		}
		types[ev.Type]++
		if err := Validate(raw); err != nil {
			t.Errorf("Validate event %d: %v", i, err)
		}
	}
	want := map[string]int{"edit": 19, "new": 1, "log": 3, "categorize": 27}
	for k, v := range want {
		if types[k] != v {
			t.Errorf("type %s: got %d, want %d", k, types[k], v)
		}
	}
}

// mutate decodes the first sample edit, applies f and re-encodes it.
func mutate(t *testing.T, f func(m, meta map[string]any)) []byte {
	t.Helper()
	for _, raw := range readSample(t).Events {
		m := mustDecodeObject(raw)
		if m["type"] != "edit" {
			continue
		}
		f(m, m["meta"].(map[string]any))
		return encodeCompact(m)
	}
	t.Fatal("no edit in sample")
	return nil
}

func TestBrokenEventsLandInDLQ(t *testing.T) {
	c, err := NewContract()
	if err != nil {
		t.Fatal(err)
	}
	r := &router{contract: c, topic: "rc", dlqTopic: "rc.dlq", url: "http://src/stream", maxBytes: 4096}
	valid := mutate(t, func(m, meta map[string]any) {})
	for _, tc := range brokenEvents(t) {
		t.Run(tc.name, func(t *testing.T) {
			got := r.route(received{id: `[{"offset":7}]`, data: string(tc.raw), at: sampleIntake})
			if !got.dlq {
				t.Fatalf("dlq: got false, want true (record %+v)", got.rec)
			}
			if got.rec.Topic != "rc.dlq" || got.rec.Partition != 0 {
				t.Errorf("topic/partition: got %s/%d, want rc.dlq/0", got.rec.Topic, got.rec.Partition)
			}
			if !bytes.Equal(got.rec.Value, tc.raw) {
				t.Errorf("value changed: got %q, want the original bytes", got.rec.Value)
			}
			m := broker.Message{Headers: got.rec.Headers}
			reason := string(m.Header(HeaderReason))
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("dlq.reason: got %q, want it to contain %q", reason, tc.reason)
			}
			if got, want := string(m.Header(HeaderSourceID)), `[{"offset":7}]`; got != want {
				t.Errorf("source.id: got %q, want %q", got, want)
			}
			if got, want := string(m.Header(HeaderSourceURL)), "http://src/stream"; got != want {
				t.Errorf("source.url: got %q, want %q", got, want)
			}
			if tc.class != ErrOversized {
				_, err := c.CheckAt(tc.raw, sampleIntake)
				if !errors.Is(err, tc.class) {
					t.Errorf("CheckAt: got %v, want errors.Is %v", err, tc.class)
				}
			}
		})
	}

	t.Run("valid goes to the topic", func(t *testing.T) {
		got := r.route(received{id: "x", data: string(valid), at: sampleIntake})
		if got.dlq || got.canary {
			t.Fatalf("got dlq=%v canary=%v, want a topic record", got.dlq, got.canary)
		}
		if got.rec.Topic != "rc" || got.rec.Partition != broker.AnyPartition {
			t.Errorf("topic/partition: got %s/%d, want rc/AnyPartition", got.rec.Topic, got.rec.Partition)
		}
		id := mustDecodeObject(valid)["meta"].(map[string]any)["id"].(string)
		if string(got.rec.Key) != id {
			t.Errorf("key: got %q, want meta.id %q", got.rec.Key, id)
		}
	})
	t.Run("canary is skipped", func(t *testing.T) {
		raw := mutate(t, func(m, meta map[string]any) { meta["domain"] = "canary" })
		got := r.route(received{id: "x", data: string(raw)})
		if !got.canary || got.dlq {
			t.Fatalf("got canary=%v dlq=%v, want canary=true dlq=false", got.canary, got.dlq)
		}
	})
}

// sampleIntake is a broker clock for the sample events: a minute after the
// last of them was taken in (meta.dt 2026-02-26T15:49:3x).
var sampleIntake = time.Date(2026, 2, 26, 15, 50, 40, 0, time.UTC)

// brokenEvent is one event the ingest must route to the DLQ.
type brokenEvent struct {
	name   string
	raw    []byte
	class  error
	reason string // substring of dlq.reason
}

// brokenEvents is the table of TestBrokenEventsLandInDLQ (also run through
// both contract compiles by TestFastNumbersSameVerdict).
func brokenEvents(t *testing.T) []brokenEvent {
	t.Helper()
	valid := mutate(t, func(m, meta map[string]any) {})
	return []brokenEvent{
		{"not json", []byte(`{"$schema": "/mediawiki/recentchange/1.0.0", "meta": {`), ErrNotJSON, "unexpected EOF"},
		{"plain text", []byte("hello"), ErrNotJSON, "invalid character"},
		{"empty data", []byte(""), ErrNotJSON, "empty data"},
		{"trailing garbage", append(bytes.Clone(valid), " {}"...), ErrNotJSON, "data after the JSON value"},
		{"array", append(append([]byte{'['}, valid...), ']'), ErrContract, "want object"},
		{"oversized", append(bytes.Clone(valid[:len(valid)-1]), `,"pad":"`+strings.Repeat("x", 4096)+`"}`...), ErrOversized, "bytes > limit 4096"},
		{"missing meta", mutate(t, func(m, meta map[string]any) { delete(m, "meta") }), ErrContract, "missing property 'meta'"},
		{"missing meta.id", mutate(t, func(m, meta map[string]any) { delete(meta, "id") }), ErrContract, "at '/meta': missing property 'id'"},
		{"meta.id not a uuid", mutate(t, func(m, meta map[string]any) { meta["id"] = "63d9586d-899f-4d33-b8a7" }), ErrContract, "at '/meta/id'"},
		{"meta.dt not a date-time", mutate(t, func(m, meta map[string]any) { meta["dt"] = "26/02/2026 15:49" }), ErrContract, "at '/meta/dt'"},
		{"missing meta.domain", mutate(t, func(m, meta map[string]any) { delete(meta, "domain") }), ErrContract, "missing property 'domain'"},
		{"bad type", mutate(t, func(m, meta map[string]any) { m["type"] = "vandalism" }), ErrContract, "at '/type'"},
		{"missing type", mutate(t, func(m, meta map[string]any) { delete(m, "type") }), ErrContract, "missing property 'type'"},
		{"timestamp float", mutate(t, func(m, meta map[string]any) { m["timestamp"] = json.Number("1772120973.5") }), ErrContract, "at '/timestamp': got number, want integer"},
		{"timestamp string", mutate(t, func(m, meta map[string]any) { m["timestamp"] = "1772120973" }), ErrContract, "at '/timestamp': got string, want integer"},
		{"timestamp above maximum", mutate(t, func(m, meta map[string]any) { m["timestamp"] = json.Number("9007199254740992") }), ErrContract,
			"at '/timestamp': maximum: got 9.007199254740992×10¹⁵, want 9.007199254740991×10¹⁵"},
		{"namespace below minimum", mutate(t, func(m, meta map[string]any) { m["namespace"] = json.Number("-1e16") }), ErrContract, "at '/namespace': minimum: got -1×10¹⁶"},
		{"revision.new fraction", mutate(t, func(m, meta map[string]any) { m["revision"].(map[string]any)["new"] = json.Number("1.5") }), ErrContract,
			"at '/revision/new': got number, want null or integer"},
		{"missing wiki", mutate(t, func(m, meta map[string]any) { delete(m, "wiki") }), ErrContract, "missing property 'wiki'"},
		{"empty wiki", mutate(t, func(m, meta map[string]any) { m["wiki"] = "" }), ErrContract, "at '/wiki'"},
		{"missing user", mutate(t, func(m, meta map[string]any) { delete(m, "user") }), ErrContract, "missing property 'user'"},
		{"missing title", mutate(t, func(m, meta map[string]any) { delete(m, "title") }), ErrContract, "missing property 'title'"},
		{"namespace string", mutate(t, func(m, meta map[string]any) { m["namespace"] = "0" }), ErrContract, "at '/namespace': got string, want integer"},
		{"edit without revision.new", mutate(t, func(m, meta map[string]any) { m["revision"] = map[string]any{"old": json.Number("1")} }), ErrContract, "at '/revision': missing property 'new'"},
		{"edit without length", mutate(t, func(m, meta map[string]any) { delete(m, "length") }), ErrContract, "missing property 'length'"},
		{"new without length.new", mutate(t, func(m, meta map[string]any) {
			m["type"] = "new"
			m["length"] = map[string]any{}
		}), ErrContract, "at '/length': missing property 'new'"},
		{"upstream: bot not boolean", mutate(t, func(m, meta map[string]any) { m["bot"] = "no" }), ErrContract, "at '/bot'"},

		// What silver cannot store, or would read differently.
		{"timestamp 1.0 form", mutate(t, func(m, meta map[string]any) { m["timestamp"] = json.Number("1772120975.0") }), ErrContract,
			"at '/timestamp': got 1772120975.0, want an integer written without fraction or exponent"},
		{"namespace in exponent form", mutate(t, func(m, meta map[string]any) { m["namespace"] = json.Number("6e0") }), ErrContract,
			"at '/namespace': got 6e0, want an integer written without fraction or exponent"},
		{"length.old beyond int64", mutate(t, func(m, meta map[string]any) { m["length"].(map[string]any)["old"] = json.Number("9223372036854775808") }), ErrContract,
			"at '/length/old': got 9223372036854775808, want an integer from -9223372036854775808 to 9223372036854775807 (silver stores int64)"},
		{"namespace beyond int32 in a log event", mutate(t, func(m, meta map[string]any) {
			m["type"] = "log"
			m["namespace"] = json.Number("-2147483649")
		}), ErrContract, "at '/namespace': got -2147483649, want an integer from -2147483648 to 2147483647 (silver stores int32)"},
		{"meta.dt lower-case t", mutate(t, func(m, meta map[string]any) { meta["dt"] = "2026-02-26t15:49:36.544z" }), ErrContract,
			"at '/meta/dt': not an RFC 3339 time silver reads"},
		{"meta.dt leap second", mutate(t, func(m, meta map[string]any) { meta["dt"] = "2026-02-26T23:59:60Z" }), ErrContract,
			"at '/meta/dt': not an RFC 3339 time silver reads"},
		{"meta.dt before 2001", mutate(t, func(m, meta map[string]any) { meta["dt"] = "2000-12-31T23:59:59.999Z" }), ErrContract,
			"at '/meta/dt': 2000-12-31T23:59:59.999Z is before 2001-01-01T00:00:00Z"},
		{"meta.dt 11 minutes ahead of the broker's clock", mutate(t, func(m, meta map[string]any) { meta["dt"] = "2026-02-26T16:01:41Z" }), ErrContract,
			"at '/meta/dt': 2026-02-26T16:01:41Z is 11m1s ahead of the broker's clock (2026-02-26T15:50:40Z), more than the 10m0s allowed"},
		{"timestamp 11 minutes ahead of meta.dt", mutate(t, func(m, meta map[string]any) { m["timestamp"] = json.Number("1772121636") }), ErrContract,
			"at '/timestamp': 1772121636 (2026-02-26T16:00:36Z) is 10m59.456s ahead of meta.dt (2026-02-26T15:49:36.544Z), more than the 10m0s allowed"},
		{"timestamp in milliseconds", mutate(t, func(m, meta map[string]any) { m["timestamp"] = json.Number("1772120975000") }), ErrContract,
			"at '/timestamp': 1772120975000 is after 9999-12-31T23:59:59Z (not Unix seconds?)"},
		{"timestamp and meta.dt in 2100", mutate(t, func(m, meta map[string]any) {
			m["timestamp"] = json.Number("4102444800")
			meta["dt"] = "2100-01-01T00:00:01Z"
		}), ErrContract, "at '/meta/dt': 2100-01-01T00:00:01Z is 26971 days ahead of the broker's clock"},
		{"case-folded timestamp", append(bytes.Clone(valid[:len(valid)-1]), `,"TIMESTAMP":4102444800}`...), ErrContract,
			`at '/TIMESTAMP': key differs from "timestamp" only in case (silver's decoder matches keys ignoring case)`},
		{"long-s key", append(bytes.Clone(valid[:len(valid)-1]), `,"\u017ferver_name":"x"}`...), ErrContract,
			"at '/\u017ferver_name': key differs from \"server_name\" only in case"},
		{"case-folded meta.id", mutate(t, func(m, meta map[string]any) { meta["ID"] = "x" }), ErrContract,
			`at '/meta/ID': key differs from "id" only in case`},
		{"case-folded revision.new", mutate(t, func(m, meta map[string]any) { m["revision"].(map[string]any)["New"] = json.Number("1") }), ErrContract,
			`at '/revision/New': key differs from "new" only in case`},
		{"key given twice", append(bytes.Clone(valid[:len(valid)-1]), `,"type":"log"}`...), ErrContract,
			"at '/type': key given twice (again at byte "},
		{"invalid UTF-8 in the title", bytes.Replace(valid, []byte(`"File:`), []byte("\"\xe9File:"), 1), ErrContract,
			"at '/title': invalid UTF-8 in a string (byte "},
		{"invalid UTF-8 in a key", append(bytes.Clone(valid[:len(valid)-1]), ",\"x\xff\":1}"...), ErrContract,
			"at '': invalid UTF-8 in a key (byte "},
		{"lone surrogate escape", bytes.Replace(valid, []byte(`"File:`), []byte(`"\ud800File:`), 1), ErrContract,
			"at '/title': a \\u escape of a lone UTF-16 surrogate in a string (byte "},
		{"edit without bot", mutate(t, func(m, meta map[string]any) { delete(m, "bot") }), ErrContract, "missing property 'bot'"},
		{"edit without server_name", mutate(t, func(m, meta map[string]any) { delete(m, "server_name") }), ErrContract, "missing property 'server_name'"},
	}
}

// violationReasons is what dlq.reason says for each of Violate's kinds (a
// part of it).
var violationReasons = map[string]string{
	"not-json":                   "not json",
	"missing-meta-id":            "at '/meta': missing property 'id'",
	"bad-type":                   "at '/type'",
	"meta-id-not-uuid":           "at '/meta/id'",
	"edit-without-revision":      "'revision'",
	"timestamp-not-integer":      "at '/timestamp': got string, want integer",
	"missing-wiki":               "missing property 'wiki'",
	"bad-meta-dt":                "at '/meta/dt'",
	"not-an-object":              "want object",
	"new-without-length":         "missing property 'length'",
	"timestamp-year-2100":        "at '/timestamp': 4102444800 (2100-01-01T00:00:00Z) is ",
	"timestamp-folded-duplicate": `at '/TIMESTAMP': key differs from "timestamp" only in case`,
	"timestamp-milliseconds":     "000 is after 9999-12-31T23:59:59Z (not Unix seconds?)",
	"timestamp-max-safe-integer": "at '/timestamp': 9007199254740991 is after 9999-12-31T23:59:59Z",
	"timestamp-float":            ".0, want an integer written without fraction or exponent",
	"timestamp-before-2001":      "at '/timestamp': 946684799 (1999-12-31T23:59:59Z) is before 2001-01-01T00:00:00Z",
	"meta-dt-year-2100":          "at '/meta/dt': 2100-01-01T00:00:00Z is ",
	"revision-new-1e20":          "at '/revision/new': got 1e20, want an integer written without fraction or exponent",
	"revision-new-30-digits":     "at '/revision/new': got 123456789012345678901234567890, want an integer from -9223372036854775808",
	"namespace-beyond-int32":     "at '/namespace': got 2147483648, want an integer from -2147483648 to 2147483647 (silver stores int32)",
	"extra-Revision-key":         `at '/Revision': key differs from "revision" only in case`,
	"log-with-Type-edit":         `at '/Type': key differs from "type" only in case`,
	"edit-without-bot":           "missing property 'bot'",
	"edit-without-server-name":   "missing property 'server_name'",
	"invalid-utf8":               "at '/title': invalid UTF-8 in a string (byte ",
}

// TestViolationsLandInDLQWithTheirReason: each of Violate's kinds, made from
// events of every type, goes to the DLQ with its reason; the kinds from
// "timestamp-year-2100" on have that one reason only.
func TestViolationsLandInDLQWithTheirReason(t *testing.T) {
	c, err := NewContract()
	if err != nil {
		t.Fatal(err)
	}
	r := &router{contract: c, topic: "rc", dlqTopic: "rc.dlq", url: "http://src/stream", maxBytes: 1 << 20}
	if len(violationReasons) != len(replay.ViolationKinds) {
		t.Fatalf("reasons for %d kinds, want %d", len(violationReasons), len(replay.ViolationKinds))
	}
	firstNew := slices.Index(replay.ViolationKinds, "timestamp-year-2100")
	rec := replay.Generate(8, 4*len(replay.ViolationKinds))
	for i, raw := range rec.Events {
		kind := replay.ViolationKinds[i%len(replay.ViolationKinds)]
		bad := replay.Violate(raw, i)
		got := r.route(received{id: "x", data: string(bad), at: time.Now()})
		reason := string(broker.Message{Headers: got.rec.Headers}.Header(HeaderReason))
		if !got.dlq || !strings.Contains(reason, violationReasons[kind]) {
			t.Errorf("%s (from a %s event): dlq %v, reason %q; want the DLQ and a reason containing %q",
				kind, mustDecodeObject(raw)["type"], got.dlq, reason, violationReasons[kind])
			continue
		}
		if i%len(replay.ViolationKinds) >= firstNew && strings.Contains(reason, "; ") {
			t.Errorf("%s: reason %q, want that one rule only", kind, reason)
		}
	}
}

func TestViolateBreaksTheContract(t *testing.T) {
	rec := replay.Generate(3, 2*len(replay.ViolationKinds))
	for i, raw := range rec.Events {
		bad := replay.Violate(raw, i)
		err := Validate(bad)
		if err == nil {
			t.Errorf("%s: Validate passed, want a violation", replay.ViolationKinds[i%len(replay.ViolationKinds)])
		}
	}
}

func TestGenerate(t *testing.T) {
	const n = 3000
	a, b := replay.Generate(42, n), replay.Generate(42, n)
	if a.Len() != n {
		t.Fatalf("len: got %d, want %d", a.Len(), n)
	}
	for i := range a.Events {
		if !bytes.Equal(a.Events[i], b.Events[i]) {
			t.Fatalf("event %d differs between two runs with seed 42", i)
		}
	}
	if c := replay.Generate(43, 10); bytes.Equal(c.Events[0], a.Events[0]) {
		t.Fatal("seeds 42 and 43 gave the same first event")
	}
	con, err := NewContract()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	types, wikis, users := map[string]int{}, map[string]int{}, map[string]int{}
	var bots, ips, temps int
	var lastTS int64
	for i, raw := range a.Events {
		ev, err := con.Check(raw)
		if err != nil {
			t.Fatalf("event %d fails the contract: %v", i, err)
		}
		if ids[ev.ID] {
			t.Fatalf("event %d: duplicate meta.id %s", i, ev.ID)
		}
		ids[ev.ID] = true
		if ev.Timestamp < lastTS {
			t.Fatalf("event %d: timestamp %d before previous %d", i, ev.Timestamp, lastTS)
		}
		lastTS = ev.Timestamp
		m := mustDecodeObject(raw)
		types[ev.Type]++
		wikis[m["wiki"].(string)]++
		u := m["user"].(string)
		users[u]++
		switch {
		case m["bot"] == true:
			bots++
		case strings.HasPrefix(u, "~2026-"):
			temps++
		case strings.Count(u, ".") == 3:
			ips++
		}
		dt, err := time.Parse(time.RFC3339Nano, m["meta"].(map[string]any)["dt"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if d := dt.Sub(time.Unix(ev.Timestamp, 0)); d < 500*time.Millisecond || d > 7*time.Second {
			t.Errorf("event %d: meta.dt - timestamp = %v, want 0.6 to 6 s", i, d)
		}
	}
	share := func(k string) float64 { return float64(types[k]) / n }
	for _, tc := range []struct {
		typ      string
		lo, high float64
	}{{"edit", .45, .55}, {"categorize", .25, .35}, {"log", .08, .16}, {"new", .05, .10}} {
		if s := share(tc.typ); s < tc.lo || s > tc.high {
			t.Errorf("share of %s: got %.3f, want %.2f..%.2f", tc.typ, s, tc.lo, tc.high)
		}
	}
	if len(wikis) < 15 {
		t.Errorf("wikis: got %d distinct, want >= 15", len(wikis))
	}
	if len(users) < 100 {
		t.Errorf("users: got %d distinct, want >= 100", len(users))
	}
	if bots == 0 || ips == 0 || temps == 0 {
		t.Errorf("editor kinds: got bots=%d ips=%d temps=%d, want all > 0", bots, ips, temps)
	}
	if avg := float64(a.Bytes()) / n; avg < 1000 || avg > 1700 {
		t.Errorf("average event size: got %.0f B, want about 1.3 KB", avg)
	}
}

func TestRecordingRoundTrip(t *testing.T) {
	rec := replay.Generate(5, 20)
	var buf bytes.Buffer
	if _, err := rec.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := replay.ReadRecording(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != rec.Len() {
		t.Fatalf("len: got %d, want %d", got.Len(), rec.Len())
	}
	for i := range rec.Events {
		if !bytes.Equal(got.Events[i], rec.Events[i]) {
			t.Fatalf("event %d differs after a round trip", i)
		}
	}
}
