package replay

import (
	"bytes"
	"encoding/json"
)

// ViolationKinds names the contract violations Violate makes, in the order
// it cycles through them. From "timestamp-year-2100" on they are the events
// that once passed the contract and then stopped or fooled silver (a
// watermark moved to 2099, a crash loop, rows silver could not store): each
// must land in the DLQ.
var ViolationKinds = []string{
	"not-json",              // the event cut in half
	"missing-meta-id",       // meta.id removed
	"bad-type",              // type "vandalism"
	"meta-id-not-uuid",      // meta.id "not-a-uuid"
	"edit-without-revision", // type edit, revision removed
	"timestamp-not-integer", // timestamp as a string
	"missing-wiki",          // wiki removed
	"bad-meta-dt",           // meta.dt "yesterday"
	"not-an-object",         // the event wrapped in an array
	"new-without-length",    // type new, length removed

	"timestamp-year-2100",        // an edit stamped 4102444800 (2100-01-01)
	"timestamp-folded-duplicate", // an edit with "TIMESTAMP": 4102444800 after its timestamp
	"timestamp-milliseconds",     // an edit's timestamp in milliseconds
	"timestamp-max-safe-integer", // 9007199254740991 (overflows microseconds)
	"timestamp-float",            // 1772120977.0: an integer to JSON Schema, not whole seconds as written
	"timestamp-before-2001",      // 946684799 (1999-12-31T23:59:59Z)
	"meta-dt-year-2100",          // meta.dt 2100-01-01T00:00:00Z: far ahead of the broker's clock
	"revision-new-1e20",          // an integer beyond int64, in exponent form
	"revision-new-30-digits",     // an integer beyond int64
	"namespace-beyond-int32",     // 2147483648
	"extra-Revision-key",         // an edit with "Revision": "junk" besides revision
	"log-with-Type-edit",         // a log event with "Type": "edit" besides its type
	"edit-without-bot",           // bot removed
	"edit-without-server-name",   // server_name removed
	"invalid-utf8",               // a byte 0xff inside the title
}

// Violate returns a copy of the valid event data broken in the way
// ViolationKinds[i % len(ViolationKinds)] names.
func Violate(data []byte, i int) []byte {
	kind := ViolationKinds[i%len(ViolationKinds)]
	switch kind {
	case "not-json":
		return bytes.Clone(data[:len(data)/2])
	case "not-an-object":
		return append(append([]byte{'['}, data...), ']')
	}
	m := mustDecodeObject(data)
	meta, _ := m["meta"].(map[string]any)
	var extra string // a member written after all others (encodeCompact sorts keys)
	switch kind {
	case "missing-meta-id":
		delete(meta, "id")
	case "bad-type":
		m["type"] = "vandalism"
	case "meta-id-not-uuid":
		meta["id"] = "not-a-uuid"
	case "edit-without-revision":
		m["type"] = "edit"
		delete(m, "revision")
	case "timestamp-not-integer":
		m["timestamp"] = "1772120973"
	case "missing-wiki":
		delete(m, "wiki")
	case "bad-meta-dt":
		meta["dt"] = "yesterday"
	case "new-without-length":
		m["type"] = "new"
		delete(m, "length")

	case "timestamp-year-2100":
		asEdit(m)["timestamp"] = json.Number("4102444800")
	case "timestamp-folded-duplicate":
		asEdit(m)
		extra = `"TIMESTAMP":4102444800`
	case "timestamp-milliseconds":
		asEdit(m)["timestamp"] = json.Number(m["timestamp"].(json.Number) + "000")
	case "timestamp-max-safe-integer":
		asEdit(m)["timestamp"] = json.Number("9007199254740991")
	case "timestamp-float":
		asEdit(m)["timestamp"] = json.Number(m["timestamp"].(json.Number) + ".0")
	case "timestamp-before-2001":
		asEdit(m)["timestamp"] = json.Number("946684799")
	case "meta-dt-year-2100":
		asEdit(m)
		meta["dt"] = "2100-01-01T00:00:00Z"
	case "revision-new-1e20":
		asEdit(m)["revision"].(map[string]any)["new"] = json.Number("1e20")
	case "revision-new-30-digits":
		asEdit(m)["revision"].(map[string]any)["new"] = json.Number("123456789012345678901234567890")
	case "namespace-beyond-int32":
		asEdit(m)["namespace"] = json.Number("2147483648")
	case "extra-Revision-key":
		asEdit(m)
		extra = `"Revision":"junk"`
	case "log-with-Type-edit":
		m["type"] = "log"
		extra = `"Type":"edit"`
	case "edit-without-bot":
		delete(asEdit(m), "bot")
	case "edit-without-server-name":
		delete(asEdit(m), "server_name")
	case "invalid-utf8":
		asEdit(m)["title"] = "Broken \x00MARK"
		return bytes.Replace(encodeCompact(m), []byte(`\u0000MARK`), []byte("\xff"), 1)
	}
	out := encodeCompact(m)
	if extra != "" {
		out = append(append(append(out[:len(out)-1:len(out)-1], ','), extra...), '}')
	}
	return out
}

// asEdit makes m a valid edit event (type edit, with the members an edit
// needs) so that the breakage applied next is its only fault, and returns m.
func asEdit(m map[string]any) map[string]any {
	m["type"] = "edit"
	if _, ok := m["revision"].(map[string]any); !ok {
		m["revision"] = map[string]any{"old": json.Number("1172275143"), "new": json.Number("1172275261")}
	}
	if _, ok := m["length"].(map[string]any); !ok {
		m["length"] = map[string]any{"old": json.Number("5080"), "new": json.Number("5121")}
	}
	if _, ok := m["bot"]; !ok {
		m["bot"] = false
	}
	if _, ok := m["server_name"]; !ok {
		m["server_name"] = "commons.wikimedia.org"
	}
	return m
}
