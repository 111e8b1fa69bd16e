package table_test

import (
	"context"
	"errors"
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
