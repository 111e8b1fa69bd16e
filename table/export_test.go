package table

import (
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
	icecat "github.com/apache/iceberg-go/catalog"
)

// CatalogOf hands the tests of this package the lake's iceberg-go catalog,
// to build a lake as an earlier version left it and to inspect its tables.
// The package's API never hands it out.
func CatalogOf(l *Lake) icecat.Catalog { return l.cat }

// PoisonPageBuffers makes compaction's page-buffer allocator overwrite
// every buffer it is given back (until the test ends) and returns how many
// it has been given back since.
func PoisonPageBuffers(t interface{ Cleanup(func()) }) func() int64 {
	p := &poisoner{Allocator: pageAlloc}
	pageAlloc = p
	t.Cleanup(func() { pageAlloc = p.Allocator })
	return p.freed.Load
}

// poisoner overwrites each buffer the reader frees before handing it back
// to Allocator (a buffer Reallocate replaces goes back unpoisoned).
type poisoner struct {
	memory.Allocator
	freed atomic.Int64
}

func (p *poisoner) Free(b []byte) {
	b = b[:cap(b)]
	for i := range b {
		b[i] = 0xA5
	}
	p.freed.Add(1)
	p.Allocator.Free(b)
}
