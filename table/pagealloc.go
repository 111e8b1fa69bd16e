package table

import (
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/internal/arrowpool"
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
// (upstream reuses a chunk's data page buffer page after page already).
// TestCompactWithPoisonedPageBuffers proves no row aliases a released
// buffer.
var pageAlloc memory.Allocator = &arrowpool.Classes{}
