package table

import icecat "github.com/apache/iceberg-go/catalog"

// CatalogOf hands the tests of this package the lake's iceberg-go catalog,
// to build a lake as an earlier version left it and to inspect its tables.
// The package's API never hands it out.
func CatalogOf(l *Lake) icecat.Catalog { return l.cat }

// PoisonPageBuffers makes compaction's page-buffer allocator overwrite
// every buffer it is given back (until the test ends) and returns how many
// buffers it has handed out again since.
func PoisonPageBuffers(t interface{ Cleanup(func()) }) func() int64 {
	pageAlloc.poison = true
	start := pageAlloc.reused.Load()
	t.Cleanup(func() { pageAlloc.poison = false })
	return func() int64 { return pageAlloc.reused.Load() - start }
}
