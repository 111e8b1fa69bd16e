package ingest

import "bytes"

// ViolationKinds names the contract violations Violate makes, in the order
// it cycles through them.
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
	}
	return encodeCompact(m)
}
