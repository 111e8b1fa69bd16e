package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
)

// mustDecodeObject decodes a JSON object (numbers as json.Number, so they
// are encoded back as they were).
func mustDecodeObject(raw []byte) map[string]any {
	v, err := decodeJSON(raw)
	if err != nil {
		panic(fmt.Sprintf("decode event: %v", err))
	}
	return v.(map[string]any)
}

// cloneObject copies m and the objects the tests mutate (meta, revision,
// length).
func cloneObject(m map[string]any) map[string]any {
	out := maps.Clone(m)
	for _, k := range []string{"meta", "revision", "length"} {
		if sub, ok := m[k].(map[string]any); ok {
			out[k] = maps.Clone(sub)
		}
	}
	return out
}

// encodeCompact encodes v as one line of JSON without HTML escaping.
func encodeCompact(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("encode event: %v", err))
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}
