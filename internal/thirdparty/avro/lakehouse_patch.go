package avro

// This file is part of the lakehouse appliance's patch to twmb/avro v1.8.0
// (see PATCH.md). iceberg-go parses an Avro schema for every manifest and
// manifest list it writes (SchemaNode.Schema renders and parses one) and
// for every one it opens (the OCF header's), a few per table commit, from
// the same few texts. A *Schema is immutable and documented safe for
// concurrent use, so Parse without options returns the schema parsed
// earlier from the same text. Options change what a parse yields; those
// parses are never cached.

import "sync"

// maxCachedSchemas bounds the cache. iceberg-go uses a few distinct texts
// per table (the manifest list's, one manifest-entry schema per partition
// type), so the bound is not reached in practice; past it, texts are
// parsed as upstream does.
const maxCachedSchemas = 256

var parsed struct {
	sync.Mutex
	m map[string]*Schema
}

func parseCached(text string) (*Schema, error) {
	parsed.Lock()
	s, ok := parsed.m[text]
	parsed.Unlock()
	if ok {
		return s, nil
	}
	s, err := parseUncached(text)
	if err != nil {
		return nil, err
	}
	parsed.Lock()
	if parsed.m == nil {
		parsed.m = make(map[string]*Schema)
	}
	if len(parsed.m) < maxCachedSchemas {
		parsed.m[text] = s
	}
	parsed.Unlock()
	return s, nil
}
