package catalog_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
	bolt "go.etcd.io/bbolt"

	"lakehouse/table/catalog"
)

// TestRootIsWhereTheTablesWereCreated: a catalog whose tables sit at their
// default locations reports the root they were created under, whatever
// "warehouse" it is opened with (a copied or moved data directory), and
// creates new tables under that root too; tables at explicit locations say
// nothing about it; default-located tables under two roots are refused.
func TestRootIsWhereTheTablesWereCreated(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.db")
	open := func(wh string) (*catalog.Catalog, error) {
		return catalog.Open(ctx, path, catalog.Options{Props: iceberg.Properties{"warehouse": wh}})
	}
	first := filepath.Join(dir, "first")
	c, err := open(first)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Root(); got != first {
		t.Fatalf("empty catalog: Root() = %q, want the warehouse %q", got, first)
	}
	if _, err := c.CreateTable(ctx, setupTable(t, c), testSchema); !errors.Is(err, icecat.ErrTableAlreadyExists) {
		t.Fatalf("inconclusive: the table was not created: %v", err)
	}
	explicit := filepath.Join(dir, "elsewhere", "x")
	if _, err := c.CreateTable(ctx, icetable.Identifier{"db", "x"}, testSchema, icecat.WithLocation(explicit)); err != nil {
		t.Fatal(err)
	}
	must(t, c.Close())

	c, err = open(filepath.Join(dir, "second"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Root(); got != first {
		t.Fatalf("reopened with another warehouse: Root() = %q, want %q", got, first)
	}
	tbl, err := c.CreateTable(ctx, icetable.Identifier{"db", "u"}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(first, "db.db", "u"); tbl.Location() != want {
		t.Fatalf("new table at %s, want %s (under the recorded root)", tbl.Location(), want)
	}
	must(t, c.Close())

	// A second root: a default-located pointer under another root, put
	// into catalog.db by hand.
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	must(t, db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("tables")).Put([]byte("db\x00w"), []byte(`{"metadata-location":"/third/db.db/w/metadata/00000-x.metadata.json"}`))
	}))
	must(t, db.Close())
	if _, err := open(first); !errors.Is(err, catalog.ErrSeveralRoots) {
		t.Fatalf("tables under two roots: open = %v, want ErrSeveralRoots", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestStraysOpenAndOneRootKept: with the owned namespaces named, a table of
// another namespace at a default location under a second root does not
// stop Open: the owned tables decide the root and the other is a Stray; a
// create or a rename that would put a table at a default location under
// another root is ErrLocation, with nothing changed.
func TestStraysOpenAndOneRootKept(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.db")
	wh := filepath.Join(dir, "wh")
	owned := func(ns icetable.Identifier) bool { return ns[0] == "db" }
	open := func() (*catalog.Catalog, error) {
		return catalog.Open(ctx, path, catalog.Options{Props: iceberg.Properties{"warehouse": wh}, Owned: owned})
	}
	c, err := open()
	if err != nil {
		t.Fatal(err)
	}
	setupTable(t, c)
	must(t, c.CreateNamespace(ctx, icetable.Identifier{"x"}, nil))
	if _, err := c.CreateTable(ctx, icetable.Identifier{"x", "t"}, testSchema, icecat.WithLocation(filepath.Join(dir, "other", "x.db", "t"))); !errors.Is(err, catalog.ErrLocation) {
		t.Fatalf("create under a second root: %v, want ErrLocation", err)
	}
	if _, err := c.CreateTable(ctx, icetable.Identifier{"x", "u"}, testSchema, icecat.WithLocation(filepath.Join(dir, "other", "y.db", "v"))); err != nil {
		t.Fatal(err)
	}
	must(t, c.CreateNamespace(ctx, icetable.Identifier{"y"}, nil))
	if _, err := c.RenameTable(ctx, icetable.Identifier{"x", "u"}, icetable.Identifier{"y", "v"}); !errors.Is(err, catalog.ErrLocation) {
		t.Fatalf("rename to a default location under a second root: %v, want ErrLocation", err)
	}
	if ok, _ := c.CheckTableExists(ctx, icetable.Identifier{"x", "u"}); !ok {
		t.Fatal("a refused rename moved the table")
	}
	must(t, c.Close())

	db, err := bolt.Open(path, 0o644, nil)
	must(t, err)
	must(t, db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("tables")).Put([]byte("x\x00w"), []byte(`{"metadata-location":"/third/x.db/w/metadata/00000-x.metadata.json"}`))
	}))
	must(t, db.Close())
	c, err = open()
	if err != nil {
		t.Fatalf("open with a client table under a second root: %v", err)
	}
	defer c.Close()
	strays, err := c.Strays(ctx)
	if err != nil || len(strays) != 1 || strays[0].Root != "/third" || c.Root() != wh {
		t.Fatalf("strays %+v (%v), root %s: want x.w under /third, root %s", strays, err, c.Root(), wh)
	}
}
