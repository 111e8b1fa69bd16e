package catalog_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table/catalog"
)

func openCatalog(t *testing.T, dir string) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Open(context.Background(), filepath.Join(dir, "catalog.db"), catalog.Options{
		Props: iceberg.Properties{"warehouse": filepath.Join(dir, "warehouse")},
	})
	if err != nil {
		t.Fatalf("open catalog: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestConformance runs iceberg-go's own catalog conformance suite. Nothing is
// skipped: the suite covers tables and namespaces (with properties), which
// this catalog fully supports.
func TestConformance(t *testing.T) {
	catalogtest.RunCatalogTests(t, catalogtest.Config{
		NewCatalog:                  func(t *testing.T) icecat.Catalog { return openCatalog(t, t.TempDir()) },
		SupportsNamespaceProperties: true,
	})
}

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
)

func setupTable(t *testing.T, c *catalog.Catalog) icetable.Identifier {
	t.Helper()
	ctx := context.Background()
	ns := icetable.Identifier{"db"}
	if err := c.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	ident := icetable.Identifier{"db", "t"}
	if _, err := c.CreateTable(ctx, ident, testSchema); err != nil {
		t.Fatalf("create table: %v", err)
	}
	return ident
}

// TestCommitCompareAndSwap: two handles on one file race snapshot commits
// pinned to the same base; exactly one wins, the loser gets ErrCommitFailed.
func TestCommitCompareAndSwap(t *testing.T) {
	dir := t.TempDir()
	a, b := openCatalog(t, dir), openCatalog(t, dir)
	ident := setupTable(t, a)
	ctx := context.Background()

	for round := range 5 {
		errs := make([]error, 2)
		txns := make([]*icetable.Transaction, 2)
		for i, c := range []*catalog.Catalog{a, b} {
			base, err := c.LoadTable(ctx, ident)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			txns[i] = base.NewTransaction()
			if err := txns[i].AssertRefSnapshotID(icetable.MainBranch); err != nil {
				t.Fatal(err)
			}
			if err := txns[i].AddFiles(ctx, nil, iceberg.Properties{"lakehouse.writer": string(rune('a' + i))}, false); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for i := range txns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = txns[i].Commit(ctx)
			}()
		}
		wg.Wait()
		failed := 0
		for _, err := range errs {
			if err != nil {
				if !errors.Is(err, icetable.ErrCommitFailed) {
					t.Fatalf("round %d: got error %v, want ErrCommitFailed or nil", round, err)
				}
				failed++
			}
		}
		if failed != 1 {
			t.Fatalf("round %d: got %d failed commits, want exactly 1 (errs %v)", round, failed, errs)
		}
		tbl, err := a.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(tbl.Metadata().Snapshots()), round+1; got != want {
			t.Fatalf("round %d: got %d snapshots, want %d", round, got, want)
		}
	}
}

// TestReopenSeesCommits: a pointer swap survives closing and reopening.
func TestReopenSeesCommits(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	c, err := catalog.Open(ctx, filepath.Join(dir, "catalog.db"), catalog.Options{
		Props: iceberg.Properties{"warehouse": filepath.Join(dir, "warehouse")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ident := setupTable(t, c)
	tbl, err := c.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := openCatalog(t, dir)
	tbl2, err := c2.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tbl2.Properties()["k"], "v"; got != want {
		t.Fatalf("property k: got %q, want %q", got, want)
	}
}
