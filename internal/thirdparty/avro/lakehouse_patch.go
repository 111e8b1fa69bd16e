package avro

// This file is part of the lakehouse appliance's patch to twmb/avro v1.8.0
// (see PATCH.md). iceberg-go parses an Avro schema for every manifest and
// manifest list it writes (SchemaNode.Schema renders and parses one) and
// for every one it opens (the OCF header's), a few per table commit, from
// the same few texts. A *Schema is immutable and documented safe for
// concurrent use, so Parse without options returns the schema parsed
// earlier from the same text. Options change what a parse yields; those
// parses are never cached.

import (
	"bytes"
	"slices"
	"sync"
)

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

// Resolve builds the resolved decoder of a writer and a reader schema on
// every call, and ocf.NewReader calls it for every file iceberg-go opens
// with a reader schema (every manifest list, every manifest): 2 % of the
// appliance's CPU at 35 events/s. Its result is a function of the two
// schemas, both immutable, and is itself a *Schema, immutable and safe for
// concurrent use, so Resolve returns the schema it resolved earlier for
// the same pair. With Parse cached, the same texts give the same pair of
// pointers. A failed resolution is not kept.

var resolvedPairs struct {
	sync.Mutex
	m map[[2]*Schema]*Schema
}

func resolveCached(writer, reader *Schema) (*Schema, error) {
	key := [2]*Schema{writer, reader}
	resolvedPairs.Lock()
	s, ok := resolvedPairs.m[key]
	resolvedPairs.Unlock()
	if ok {
		return s, nil
	}
	s, err := resolveUncached(writer, reader)
	if err != nil {
		return nil, err
	}
	resolvedPairs.Lock()
	if resolvedPairs.m == nil {
		resolvedPairs.m = make(map[[2]*Schema]*Schema)
	}
	if len(resolvedPairs.m) < maxCachedSchemas {
		resolvedPairs.m[key] = s
	}
	resolvedPairs.Unlock()
	return s, nil
}

// Schema.Root re-parses the schema's JSON on every call (about 40 KB of
// garbage for a manifest-entry schema), and iceberg-go calls it for every
// manifest it reads or writes (getFieldIDMap, inferManifestListVersion,
// NewManifestEntrySchema): 5 % of the appliance's CPU at 35 events/s. The
// patch keeps, per *Schema, a private copy of the first tree Root built and
// hands out deep clones of it: the caller owns what it gets and may change
// it, exactly as with a fresh parse, and the kept copy is never handed out.

// cloneRoot deep-copies a tree built by Root and stamps the clone's
// name-reference nodes with definitions inside the clone, as Root does.
func cloneRoot(src *SchemaNode) *SchemaNode {
	n := new(SchemaNode)
	cloneNodeInto(n, src)
	table := map[string]*SchemaNode{}
	collectNamedTypes(n, table)
	stampNameRefs(n, table, "")
	return n
}

// cloneNodeInto copies src into dst with nothing shared: slices, maps,
// child nodes and JSON-shaped defaults and properties are copied. The
// reference stamp is left for cloneRoot to redo.
func cloneNodeInto(dst, src *SchemaNode) {
	*dst = *src
	dst.refTarget, dst.refNS = nil, ""
	dst.Aliases = slices.Clone(src.Aliases)
	dst.Symbols = slices.Clone(src.Symbols)
	dst.Props = cloneProps(src.Props)
	if src.Fields != nil {
		dst.Fields = make([]SchemaField, len(src.Fields))
		for i := range src.Fields {
			f, g := &dst.Fields[i], &src.Fields[i]
			*f = *g
			cloneNodeInto(&f.Type, &g.Type)
			f.Default = cloneJSON(g.Default)
			f.Aliases = slices.Clone(g.Aliases)
			f.Props = cloneProps(g.Props)
		}
	}
	if src.Items != nil {
		dst.Items = new(SchemaNode)
		cloneNodeInto(dst.Items, src.Items)
	}
	if src.Values != nil {
		dst.Values = new(SchemaNode)
		cloneNodeInto(dst.Values, src.Values)
	}
	if src.Branches != nil {
		dst.Branches = make([]SchemaNode, len(src.Branches))
		for i := range src.Branches {
			cloneNodeInto(&dst.Branches[i], &src.Branches[i])
		}
	}
}

func cloneProps(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneJSON(v)
	}
	return out
}

// cloneJSON copies the containers of a decoded default or property value
// (map[string]any, []any, []byte); other values (numbers, strings, bools,
// nil) are immutable.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneProps(x)
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneJSON(e)
		}
		return out
	case []byte:
		return bytes.Clone(x)
	default:
		return v
	}
}
