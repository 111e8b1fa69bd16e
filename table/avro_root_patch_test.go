package table_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"

	"lakehouse/table"
)

// namedRefsSchema has what Root's reference stamping is for: a named record
// defined once and referenced by name (also from inside a union, an array
// and a map, and from itself), an enum and a fixed referenced the same way,
// namespaces, properties and container defaults.
const namedRefsSchema = `{"type":"record","name":"entry","namespace":"ns.a","fields":[
	{"name":"id","type":"long","field-id":1,"doc":"the id"},
	{"name":"file","type":{"type":"record","name":"file","namespace":"ns.b","fields":[
		{"name":"path","type":"string","field-id":2},
		{"name":"next","type":["null","file"],"default":null},
		{"name":"kind","type":{"type":"enum","name":"kind","symbols":["DATA","DELETES"],"default":"DATA"}},
		{"name":"hash","type":{"type":"fixed","name":"md5","size":16}}
	]},"field-id":3},
	{"name":"previous","type":["null","ns.b.file"],"default":null,"field-id":4},
	{"name":"history","type":{"type":"array","items":"ns.b.file","element-id":5},"default":[]},
	{"name":"kinds","type":{"type":"map","values":"ns.b.kind"},"default":{"a":"DATA"}},
	{"name":"sums","type":{"type":"array","items":"ns.b.md5"},"default":[]},
	{"name":"tags","type":{"type":"map","values":"string"},"default":{"k":"v"},"props-here":{"nested":[1,2]}},
	{"name":"blob","type":"bytes","default":"\u00ff\u0000"}
]}`

// TestAvroRootClonesPatched: Schema.Root hands out a deep clone of the tree
// it built first (internal/thirdparty/avro, PATCH.md) instead of parsing the
// schema's JSON again. Every later tree must equal the first one, be the
// caller's own (changing it changes no later tree), convert back to the same
// schema from any subtree (the name-reference stamps point into the clone),
// and cost well under a parse. The schemas are the test's own with named
// references and the manifest list and manifest iceberg-go writes.
func TestAvroRootClonesPatched(t *testing.T) {
	texts := map[string]string{"named references": namedRefsSchema}
	for name, text := range icebergAvroSchemas(t) {
		texts[name] = text
	}
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			s, err := avro.Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			first := s.Root()
			second := s.Root()
			if first == second {
				t.Fatal("Root returned the same tree twice")
			}
			if !reflect.DeepEqual(first, second) {
				t.Fatalf("the second tree differs from the first:\n%+v\n%+v", first, second)
			}
			sameConversions(t, first, second)

			// The caller owns the clone: change it everywhere.
			mutateTree(second)
			third := s.Root()
			ref, err := avro.Parse(text, avro.WithNamespace("")) // not cached: shares nothing
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ref.Root(), third) || !reflect.DeepEqual(ref.Root(), first) {
				t.Fatal("changing a tree Root returned changed another one")
			}
			sameConversions(t, first, third)

			var fresh *avro.Schema
			perParse := allocBytes(func() {
				// A parse with an option is not cached: a new *Schema,
				// whose first Root parses.
				if fresh, err = avro.Parse(text, avro.WithNamespace("")); err != nil {
					t.Fatal(err)
				}
			}, func() { _ = fresh.Root() })
			perClone := allocBytes(func() {}, func() { _ = s.Root() })
			t.Logf("Root: %d bytes allocated when it parses, %d when it clones", perParse, perClone)
			if perClone*2 > perParse {
				t.Errorf("a repeated Root allocated %d bytes against %d for a parse: is the patch gone?", perClone, perParse)
			}
		})
	}
}

// sameConversions checks that every node of a and of b (two equal trees)
// converts back to the same schema text, subtrees included: a subtree that
// only names a type converts through the clone's own reference stamp.
func sameConversions(t *testing.T, a, b *avro.SchemaNode) {
	t.Helper()
	var walk func(path string, x, y *avro.SchemaNode)
	walk = func(path string, x, y *avro.SchemaNode) {
		sx, errx := x.Schema()
		sy, erry := y.Schema()
		if (errx == nil) != (erry == nil) {
			t.Fatalf("%s: converting the first tree: %v, the clone: %v", path, errx, erry)
		}
		if errx == nil && sx.String() != sy.String() {
			t.Fatalf("%s: converts to\n%s\nand in the clone to\n%s", path, sx, sy)
		}
		for i := range x.Fields {
			walk(path+"."+x.Fields[i].Name, &x.Fields[i].Type, &y.Fields[i].Type)
		}
		for i := range x.Branches {
			walk(path+"|"+x.Branches[i].Type, &x.Branches[i], &y.Branches[i])
		}
		if x.Items != nil {
			walk(path+"[]", x.Items, y.Items)
		}
		if x.Values != nil {
			walk(path+"{}", x.Values, y.Values)
		}
	}
	walk("root", a, b)
}

// mutateTree changes every slice, map and default of n and its children.
func mutateTree(n *avro.SchemaNode) {
	n.Name += "-changed"
	n.Aliases = append(n.Aliases[:len(n.Aliases):len(n.Aliases)], "changed")
	for i := range n.Symbols {
		n.Symbols[i] = "CHANGED"
	}
	for k := range n.Props {
		n.Props[k] = "changed"
	}
	for i := range n.Fields {
		f := &n.Fields[i]
		f.Name += "-changed"
		for k := range f.Props {
			f.Props[k] = "changed"
		}
		switch d := f.Default.(type) {
		case map[string]any:
			d["changed"] = true
		case []any:
			if len(d) > 0 {
				d[0] = "changed"
			}
		case []byte:
			if len(d) > 0 {
				d[0] ^= 0xff
			}
		}
		mutateTree(&f.Type)
	}
	for i := range n.Branches {
		mutateTree(&n.Branches[i])
	}
	if n.Items != nil {
		mutateTree(n.Items)
	}
	if n.Values != nil {
		mutateTree(n.Values)
	}
}

// allocBytes returns the bytes fn allocates, the least of five runs (setup
// runs first, unmeasured).
func allocBytes(setup, fn func()) uint64 {
	best := ^uint64(0)
	for range 5 {
		setup()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		best = min(best, after.TotalAlloc-before.TotalAlloc)
	}
	return best
}

// icebergAvroSchemas commits a bronze batch and returns the header schemas
// of the manifest list and the manifest iceberg-go wrote for it.
func icebergAvroSchemas(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	l := openLake(t, table.Config{Dir: dir})
	rec, _ := realBronze(sampleEvents(t), 0, 10)
	defer rec.Release()
	if _, err := l.CommitBatch(context.Background(), table.Bronze, table.Batch{Query: "root-test", ID: 1,
		Offsets: `{"0":10}`, Records: []arrow.RecordBatch{rec}}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".avro") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rd, err := ocf.NewReader(bytes.NewReader(b))
		if err != nil {
			return err
		}
		kind := "manifest"
		if strings.HasPrefix(d.Name(), "snap-") {
			kind = "manifest list"
		}
		out[kind] = rd.Schema().String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if out["manifest"] == "" || out["manifest list"] == "" {
		t.Fatalf("inconclusive: no manifest and manifest list found under %s (%v)", dir, out)
	}
	return out
}
