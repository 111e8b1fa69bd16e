// Package arrowpool owns the Arrow allocators that hand released buffers
// out again instead of leaving them to the garbage collector: Bounded for
// the large buffers a bronze batch builds (kept across collections, bounded
// in count and bytes), Classes for the small buffers a Parquet reader uses
// per column chunk (kept in sync.Pools, so the collector takes what a quiet
// process no longer uses). Both hand out zeroed memory, as Arrow's Go and C
// allocators do. Nothing survives a crash: this is memory only.
package arrowpool

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// zeroed is a recycled buffer b handed out for size bytes: cleared over
// its whole capacity, not only its first size bytes, because Reallocate
// grows within the capacity without copying, and Arrow expects what it
// grows into to be zero as Go's allocator leaves it (a buffer Go's
// allocator hands out has no capacity beyond its size).
func zeroed(b []byte, size int) []byte {
	clear(b[:cap(b)])
	return b[:size]
}

// grow is Reallocate for an allocator that recycles what it frees.
func grow(a memory.Allocator, size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Bounded recycles buffers of at least Min bytes in power-of-two classes,
// keeping at most PerClass buffers of a class and MaxBytes in all; smaller
// requests go to the Go allocator.
type Bounded struct {
	min, perClass, maxBytes int

	mu    sync.Mutex
	free  map[int][][]byte // by capacity
	kept  int              // bytes (capacity) in free
	small memory.GoAllocator
}

var _ memory.Allocator = (*Bounded)(nil)

// NewBounded returns a Bounded allocator with the given limits.
func NewBounded(min, perClass, maxBytes int) *Bounded {
	return &Bounded{min: min, perClass: perClass, maxBytes: maxBytes, free: map[int][][]byte{}}
}

func (a *Bounded) Allocate(size int) []byte {
	if size < a.min {
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
	return zeroed(b, size)
}

func (a *Bounded) Reallocate(size int, b []byte) []byte { return grow(a, size, b) }

func (a *Bounded) Free(b []byte) {
	c := cap(b)
	if c < a.min || c&(c-1) != 0 {
		return
	}
	a.mu.Lock()
	if len(a.free[c]) < a.perClass && a.kept+c <= a.maxBytes {
		a.free[c] = append(a.free[c], b[:0])
		a.kept += c
	}
	a.mu.Unlock()
}

const (
	minClass = 10 // 1 KiB: smaller requests round up to it
	maxClass = 22 // 4 MiB: larger ones are not kept
)

// Classes recycles buffers of up to 4 MiB through one sync.Pool per
// power-of-two class. Its zero value is ready to use.
type Classes struct {
	pools [maxClass - minClass + 1]sync.Pool
}

var _ memory.Allocator = (*Classes)(nil)

func class(size int) int { return max(minClass, bits.Len(uint(size-1))) }

func (a *Classes) Allocate(size int) []byte {
	c := class(size)
	if c > maxClass {
		return make([]byte, size)
	}
	if p, ok := a.pools[c-minClass].Get().(*[]byte); ok {
		return zeroed(*p, size)
	}
	return make([]byte, size, 1<<c) // size-class aligned
}

func (a *Classes) Reallocate(size int, b []byte) []byte { return grow(a, size, b) }

func (a *Classes) Free(b []byte) {
	c := cap(b)
	if c < 1<<minClass || c > 1<<maxClass || c&(c-1) != 0 {
		return
	}
	b = b[:0]
	a.pools[bits.Len(uint(c))-1-minClass].Put(&b)
}
