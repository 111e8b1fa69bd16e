package table

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRootedFSResolves: paths under the recorded root map under the actual
// warehouse, paths already there stay, and every other path (another
// directory, a sibling with a common prefix, a way out through "..", a
// file:// URI elsewhere) is refused with ErrOutsideWarehouse for reads and
// writes alike.
func TestRootedFSResolves(t *testing.T) {
	r := newRootedFS("/orig/warehouse", "/copy/warehouse")
	for in, want := range map[string]string{
		"/orig/warehouse/bronze.db/t/data/a.parquet":         "/copy/warehouse/bronze.db/t/data/a.parquet",
		"file:///orig/warehouse/bronze.db/t/metadata/1.json": "/copy/warehouse/bronze.db/t/metadata/1.json",
		"/copy/warehouse/bronze.db/t/data/b.parquet":         "/copy/warehouse/bronze.db/t/data/b.parquet",
		"/orig/warehouse": "/copy/warehouse",
	} {
		got, err := r.resolve(in)
		if err != nil || got != want {
			t.Errorf("resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"/etc/passwd",
		"/orig/warehouse2/x",
		"/copy/warehouse-old/x",
		"/orig/warehouse/../../etc/passwd",
		"/copy/warehouse/../data/broker.db",
		"file:///elsewhere/x",
	} {
		if got, err := r.resolve(in); !errors.Is(err, ErrOutsideWarehouse) {
			t.Errorf("resolve(%q) = %q, %v; want ErrOutsideWarehouse", in, got, err)
		}
	}
	if err := r.WriteFile("/etc/lakehouse-test", []byte("x")); !errors.Is(err, ErrOutsideWarehouse) {
		t.Errorf("WriteFile outside: %v", err)
	}
	if err := r.Remove("/orig/warehouse/../x"); !errors.Is(err, ErrOutsideWarehouse) {
		t.Errorf("Remove outside: %v", err)
	}
}

// TestRootedFSWalkReportsTheGivenRoot: walking a directory under the
// recorded root lists the files of the actual one, named under the root
// asked for (as the metadata names them), so orphan cleanup compares like
// with like.
func TestRootedFSWalkReportsTheGivenRoot(t *testing.T) {
	actual := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(actual, "ns.db", "t", "data"), 0o755))
	must(os.WriteFile(filepath.Join(actual, "ns.db", "t", "data", "a.parquet"), []byte("a"), 0o644))
	r := newRootedFS("/orig/warehouse", actual)
	var got []string
	must(r.WalkDir("/orig/warehouse/ns.db/t", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			got = append(got, p)
		}
		return nil
	}))
	if want := []string{"/orig/warehouse/ns.db/t/data/a.parquet"}; !slices.Equal(got, want) {
		t.Fatalf("walk reported %q, want %q", got, want)
	}
	data, err := r.ReadFile("/orig/warehouse/ns.db/t/data/a.parquet")
	if err != nil || string(data) != "a" {
		t.Fatalf("read through the recorded root: %q, %v", data, err)
	}
}
