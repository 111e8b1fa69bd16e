package recentchange

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"lakehouse/internal/sample"
)

// TestFieldListsAreSilversStruct: the lists the contract checks keys and
// integers against (recentchange) are exactly the members rawEvent reads,
// with its integer sizes: a field added to silver without the contract
// knowing fails here.
func TestFieldListsAreSilversStruct(t *testing.T) {
	tags := func(typ reflect.Type) (names []string, ints map[string]int) {
		ints = map[string]int{}
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			names = append(names, tag)
			k := f.Type
			if k.Kind() == reflect.Pointer {
				k = k.Elem()
			}
			switch k.Kind() {
			case reflect.Int32:
				ints[tag] = 32
			case reflect.Int64:
				ints[tag] = 64
			}
		}
		return names, ints
	}
	top, topInts := tags(reflect.TypeFor[rawEvent]())
	meta, _ := tags(reflect.TypeFor[rawEvent]().Field(0).Type)
	oldNew, oldNewInts := tags(reflect.TypeFor[oldNew]())
	for _, c := range []struct {
		name      string
		got, want []string
	}{{"event", EventFields, top}, {"meta", MetaFields, meta}, {"length/revision", OldNewFields, oldNew}} {
		if !slices.Equal(slices.Sorted(slices.Values(c.got)), slices.Sorted(slices.Values(c.want))) {
			t.Errorf("%s members: recentchange lists %q, rawEvent reads %q", c.name, c.got, c.want)
		}
	}
	want := map[string]int{}
	for k, v := range topInts {
		want[k] = v
	}
	for _, parent := range []string{"length", "revision"} {
		for k, v := range oldNewInts {
			want[parent+"."+k] = v
		}
	}
	got := map[string]int{}
	for _, in := range Ints {
		got[strings.Join(in.Path, ".")] = in.Bits
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("integers: Ints %v, rawEvent %v", got, want)
	}
}

// sampleEvents are the recorded events (internal/sample).
func sampleEvents(t testing.TB) [][]byte {
	t.Helper()
	return sample.Events()
}
