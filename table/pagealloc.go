package table

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// pageAlloc is the allocator of the Parquet reader's own buffers when
// compaction reads a file (readFile): the page reader of every column chunk
// allocates a 16 KiB decompression buffer and page buffers, and releases
// them when the chunk is done. Compaction reads a minute of one-second files
// at a time, twenty-odd columns each, so at the real stream's rate those
// buffers were a tenth of all the bytes the appliance allocated (an
// allocation profile of the soak). pageAlloc hands released buffers out
// again. It is not the allocator of the rows read: the records keep
// GoAllocator memory, so nothing a record holds is ever recycled; what the
// page reader decodes from a page is copied into the record's builders
// (dataPageBuffer is reused page after page upstream already).
// TestCompactWithPoisonedPageBuffers proves no row aliases a released
// buffer. sync.Pool lets the collector take what compactions no longer use.
var pageAlloc = &poolAlloc{}

const (
	minPageClass = 10 // 1 KiB: smaller requests round up to it
	maxPageClass = 22 // 4 MiB: larger ones are not kept
)

// poolAlloc is a memory.Allocator recycling power-of-two buffers through
// one sync.Pool per size class.
type poolAlloc struct {
	pools [maxPageClass - minPageClass + 1]sync.Pool
	// poison, when set (tests), overwrites every freed buffer, so a reader
	// of a recycled buffer's old bytes sees garbage.
	poison bool
	reused atomic.Int64 // buffers handed out again
}

var _ memory.Allocator = (*poolAlloc)(nil)

func pageClass(size int) int { return max(minPageClass, bits.Len(uint(size-1))) }

func (a *poolAlloc) Allocate(size int) []byte {
	c := pageClass(size)
	if c > maxPageClass {
		return make([]byte, size)
	}
	if p, ok := a.pools[c-minPageClass].Get().(*[]byte); ok {
		a.reused.Add(1)
		b := (*p)[:size]
		clear(b) // as GoAllocator and the C allocator hand it out
		return b
	}
	return make([]byte, size, 1<<c)
}

func (a *poolAlloc) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (a *poolAlloc) Free(b []byte) {
	c := cap(b)
	if c < 1<<minPageClass || c > 1<<maxPageClass || c&(c-1) != 0 {
		return
	}
	b = b[:c]
	if a.poison {
		for i := range b {
			b[i] = 0xA5
		}
	}
	b = b[:0]
	a.pools[bits.Len(uint(c))-1-minPageClass].Put(&b)
}
