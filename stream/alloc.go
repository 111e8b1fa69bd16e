package stream

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// poolAllocator is an Arrow allocator that recycles large buffers. A bronze
// batch builds tens of MB of Arrow buffers and releases them after the
// table commit; fresh memory for each batch costs more (page faults, zeroing,
// GC) than reading the broker. Small allocations go to the Go allocator.
// What it keeps is bounded in bytes as well as per size class: after a
// burst of large events it held a dozen buffers of each class up to the
// largest batch, hundreds of MB that the live stream never used again.
type poolAllocator struct {
	mu    sync.Mutex
	free  map[int][][]byte // by power-of-two capacity
	kept  int              // bytes (capacity) in free
	small memory.GoAllocator
}

const (
	poolMinSize  = 1 << 20 // below this, plain Go allocation
	poolPerClass = 12      // buffers kept per size class (4 partitions x 2 batches in flight, + slack)
	// poolMaxBytes bounds the bytes kept: two byte-capped batches (the one
	// in flight and the one read ahead).
	poolMaxBytes = 2 * DefaultMaxBytesPerTrigger
)

func newPoolAllocator() *poolAllocator {
	return &poolAllocator{free: map[int][][]byte{}}
}

func (a *poolAllocator) Allocate(size int) []byte {
	if size < poolMinSize {
		return a.small.Allocate(size)
	}
	class := 1 << bits.Len(uint(size-1))
	a.mu.Lock()
	list := a.free[class]
	var b []byte
	if n := len(list); n > 0 {
		b, a.free[class] = list[n-1], list[:n-1]
		a.kept -= class
	}
	a.mu.Unlock()
	if b == nil {
		return make([]byte, size, class) // large Go allocations are page aligned
	}
	b = b[:size]
	clear(b)
	return b
}

func (a *poolAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (a *poolAllocator) Free(b []byte) {
	c := cap(b)
	if c < poolMinSize || c&(c-1) != 0 {
		return
	}
	a.mu.Lock()
	if len(a.free[c]) < poolPerClass && a.kept+c <= poolMaxBytes {
		a.free[c] = append(a.free[c], b[:0])
		a.kept += c
	}
	a.mu.Unlock()
}
