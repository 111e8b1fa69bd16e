package table_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lakehouse/table"
)

// TestWarehouseOwnedByOneDataDir: a warehouse outside its data directory
// (S3, or a local --warehouse elsewhere) is claimed by the first data
// directory that writes to it; another data directory (a copy, whose
// catalog would commit to the same tables) is refused naming the owner,
// unless it takes the warehouse over; read-only opens are never refused.
func TestWarehouseOwnedByOneDataDir(t *testing.T) {
	ctx := context.Background()
	for _, wh := range []struct {
		name string
		cfg  func() table.Config
	}{
		{"s3", func() table.Config {
			return table.Config{Warehouse: "s3://lake/wh", S3: table.S3Config{Endpoint: fakeS3(t, "lake"), Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s"}}
		}},
		{"local-elsewhere", func() table.Config { return table.Config{Warehouse: filepath.Join(t.TempDir(), "shared")} }},
	} {
		t.Run(wh.name, func(t *testing.T) {
			base := wh.cfg()
			at := func(dir string, mod func(*table.Config)) (*table.Lake, error) {
				c := base
				c.Dir = dir
				if mod != nil {
					mod(&c)
				}
				return table.Open(ctx, c)
			}
			a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
			l, err := at(a, nil)
			if err != nil {
				t.Fatal(err)
			}
			must(t, l.EnsureTables(ctx))
			must(t, l.Close())
			if l, err = at(a, nil); err != nil {
				t.Fatalf("the owner reopening: %v", err)
			}
			must(t, l.Close())
			_, err = at(b, nil)
			if !errors.Is(err, table.ErrWarehouseOwned) || !strings.Contains(err.Error(), a) {
				t.Fatalf("a second data directory: %v, want ErrWarehouseOwned naming %s", err, a)
			}
			if l, err = at(b, func(c *table.Config) { c.TakeOverWarehouse = true }); err != nil {
				t.Fatalf("take over: %v", err)
			}
			must(t, l.Close())
			if _, err := at(a, nil); !errors.Is(err, table.ErrWarehouseOwned) {
				t.Fatalf("the old owner after a take-over: %v, want ErrWarehouseOwned", err)
			}
			if l, err = at(a, func(c *table.Config) { c.ReadOnly = true }); err != nil {
				t.Fatalf("read-only open by a non-owner: %v", err)
			}
			must(t, l.Close())
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRESTCatalogSharedByDataDirs: tables in a REST catalog belong to the
// catalog, not to a data directory: processes with their own data
// directories (ingest, stream and marts roles) open them together, each
// sees the others' commits, and none writes an owner record.
func TestRESTCatalogSharedByDataDirs(t *testing.T) {
	ctx := context.Background()
	shared := t.TempDir()
	url := restCatalog(t, shared)
	cfg := func(dir string) table.Config {
		return table.Config{Dir: dir, Catalog: "rest+" + url, Warehouse: filepath.Join(shared, "warehouse")}
	}
	a := openLake(t, cfg(filepath.Join(t.TempDir(), "a")))
	b := openLake(t, cfg(filepath.Join(t.TempDir(), "b")))
	if _, err := a.CommitBatch(ctx, table.Bronze, batchOf("bronze", 0, bronzeRecord(0, 0, 10))); err != nil {
		t.Fatal(err)
	}
	if rows, _ := scanOffsets(t, b, table.Bronze); rows != 10 {
		t.Fatalf("the second data directory sees %d rows, want 10", rows)
	}
	if _, err := os.Stat(filepath.Join(shared, "warehouse", ".lakehouse-owner")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("owner record in a REST catalog's warehouse: %v", err)
	}
}
