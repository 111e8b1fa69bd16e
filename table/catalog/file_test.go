package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
	bolt "go.etcd.io/bbolt"

	"lakehouse/internal/boltfile"
	"lakehouse/internal/procmem"
	"lakehouse/table/catalog"
)

// bigCatalog writes a catalog.db of about 40 MB: 1000 namespaces with a
// 40 KB property each, 200 of them dropped again (free pages).
func bigCatalog(t *testing.T) (dir, path string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "catalog.db")
	ctx := context.Background()
	c, err := catalog.Open(ctx, path, catalog.Options{Props: iceberg.Properties{"warehouse": filepath.Join(dir, "warehouse")}})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("p", 40_000)
	for i := range 1000 {
		if err := c.CreateNamespace(ctx, icetable.Identifier{fmt.Sprintf("ns%04d", i)}, iceberg.Properties{"big": big}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 200 {
		if err := c.DropNamespace(ctx, icetable.Identifier{fmt.Sprintf("ns%04d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// TestOpenReadsAFewPagesOfALargeCatalog: opening a catalog.db of about
// 40 MB (with free pages), creating a namespace and reading one back read
// under 1 MiB and leave under 1 MiB of the file resident: Open reads the
// meta, root and freelist pages, not every page in use (as it did before).
// The same counter sees CheckFile read the whole file.
func TestOpenReadsAFewPagesOfALargeCatalog(t *testing.T) {
	dir, path := bigCatalog(t)
	s, err := catalog.CheckFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(s.Pages) * int64(s.PageSize)
	if size < 30<<20 || s.Free < 100 {
		t.Fatalf("inconclusive: %d bytes in use, %d free pages", size, s.Free)
	}
	ctx := context.Background()
	read0, err := procmem.ReadChars()
	if err != nil {
		t.Skipf("no I/O counters: %v", err)
	}
	c, err := catalog.Open(ctx, path, catalog.Options{Props: iceberg.Properties{"warehouse": filepath.Join(dir, "warehouse")}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.CreateNamespace(ctx, icetable.Identifier{"new"}, nil); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.CheckNamespaceExists(ctx, icetable.Identifier{"ns0500"}); err != nil || !ok {
		t.Fatalf("namespace ns0500: %v, %v", ok, err)
	}
	read1, _ := procmem.ReadChars()
	resident, err := procmem.MappedResident(path)
	if err != nil {
		t.Skipf("no process mappings: %v", err)
	}
	t.Logf("%d MiB, %d free pages: Open, a commit and a read read %d KiB, left %d KiB resident", size>>20, s.Free, (read1-read0)>>10, resident>>10)
	if read1-read0 > 1<<20 || resident > 1<<20 {
		t.Errorf("read %d KiB and left %d KiB of a %d MiB catalog resident, want both under 1 MiB", (read1-read0)>>10, resident>>10, size>>20)
	}
	c.Close()
	read0, _ = procmem.ReadChars()
	if _, err := catalog.CheckFile(path); err != nil {
		t.Fatal(err)
	}
	if read1, _ := procmem.ReadChars(); read1-read0 < size/2 {
		t.Errorf("CheckFile read %d of %d bytes: the read counter misses reads", read1-read0, size)
	}
}

// TestDamagedCatalogPageFoundByFirstRead: a garbled leaf of the namespaces
// bucket is not read by Open, which succeeds; the first read that reaches
// it is an error naming the file and wrapping boltfile.ErrDamaged, never a
// panic or a fault, and other namespaces still read; CheckFile refuses
// the file, naming it.
func TestDamagedCatalogPageFoundByFirstRead(t *testing.T) {
	dir, path := bigCatalog(t)
	var leaves []int
	var pageSize int
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.View(func(tx *bolt.Tx) error {
		pageSize = tx.DB().Info().PageSize
		for id := 2; int64(id)*int64(pageSize) < tx.Size(); id++ {
			if p, err := tx.Page(id); err == nil && p != nil && p.Type == "leaf" && p.Count > 1 {
				leaves = append(leaves, id)
			}
		}
		return nil
	})
	bdb.Close()
	if err != nil || len(leaves) < 10 {
		t.Fatalf("inconclusive: %d leaves (%v)", len(leaves), err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5, 0x17, 0xFF, 0x03}, pageSize/4), int64(leaves[len(leaves)/2])*int64(pageSize)); err != nil {
		t.Fatal(err)
	}
	f.Close()

	ctx := context.Background()
	c, err := catalog.Open(ctx, path, catalog.Options{Props: iceberg.Properties{"warehouse": filepath.Join(dir, "warehouse")}, ReadOnly: true})
	if err != nil {
		t.Fatalf("Open read a leaf of namespaces: %v", err)
	}
	defer c.Close()
	refused, found := 0, 0
	for i := 200; i < 1000; i++ {
		_, err := c.LoadNamespaceProperties(ctx, icetable.Identifier{fmt.Sprintf("ns%04d", i)})
		switch {
		case err == nil:
			found++
		case errors.Is(err, boltfile.ErrDamaged) && strings.Contains(err.Error(), path):
			refused++
		default:
			t.Fatalf("namespace ns%04d: %v, want nil or a damaged-file error naming %s", i, err, path)
		}
	}
	if refused == 0 || found < 700 {
		t.Fatalf("%d namespaces refused, %d read: want a few refused, the others read", refused, found)
	}
	if _, err := catalog.CheckFile(path); !errors.Is(err, boltfile.ErrDamaged) || !strings.Contains(err.Error(), path) {
		t.Fatalf("CheckFile of a file with a garbled leaf: %v, want an error naming it", err)
	}
}
