package arrowpool

import (
	"testing"
	"unsafe"
)

func same(a, b []byte) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

// TestBoundedRecyclesWithinBounds: a freed large buffer is handed out
// again, zeroed; small requests and buffers past the class and byte bounds
// are not kept.
func TestBoundedRecyclesWithinBounds(t *testing.T) {
	a := NewBounded(1<<20, 2, 5<<20)
	b := a.Allocate(1<<20 + 5)
	if cap(b) != 2<<20 {
		t.Fatalf("capacity %d, want the 2 MiB class", cap(b))
	}
	b[0] = 7
	a.Free(b)
	c := a.Allocate(1<<20 + 100)
	if !same(b, c) || c[0] != 0 || len(c) != 1<<20+100 {
		t.Fatalf("a freed buffer was not handed out again, zeroed (same %v, first byte %d)", same(b, c), c[0])
	}
	bufs := [][]byte{a.Allocate(2 << 20), a.Allocate(2 << 20), a.Allocate(2 << 20)}
	for _, x := range bufs {
		a.Free(x)
	}
	if a.kept != 4<<20 || len(a.free[2<<20]) != 2 {
		t.Fatalf("kept %d bytes in %d buffers, want 2 buffers of 2 MiB (per-class bound)", a.kept, len(a.free[2<<20]))
	}
	a.Free(make([]byte, 4<<20))
	if a.kept != 4<<20 {
		t.Fatalf("kept %d bytes past the 5 MiB bound", a.kept)
	}
	a.Free(a.Allocate(100))
	if len(a.free) != 1 {
		t.Fatalf("a small buffer was kept: %d classes", len(a.free))
	}
}

// TestClassesRecycles: a freed buffer of a class is handed out again,
// zeroed, for a request of the same class; a grown buffer keeps its bytes.
func TestClassesRecycles(t *testing.T) {
	var a Classes
	var c []byte
	reused := false
	for range 10 { // sync.Pool may drop a buffer (a collection, the race detector)
		b := a.Allocate(3000)
		if cap(b) != 4096 {
			t.Fatalf("capacity %d, want 4096", cap(b))
		}
		b[10] = 9
		a.Free(b)
		if c = a.Allocate(4000); same(b, c) {
			reused = true
			break
		}
	}
	if !reused || c[10] != 0 || cap(c) != 4096 {
		t.Fatalf("a freed buffer was not handed out again, zeroed (reused %v, byte %d, cap %d)", reused, c[10], cap(c))
	}
	c[1] = 3
	d := a.Reallocate(10000, c)
	if cap(d) != 16384 || d[1] != 3 || len(d) != 10000 {
		t.Fatalf("grown buffer: cap %d, byte %d, len %d", cap(d), d[1], len(d))
	}
}

// TestRecycledGrowsIntoZeroes: a recycled buffer handed out for fewer bytes
// than its class and then grown within its capacity (Reallocate does not
// copy then) shows zeroes beyond what the new owner wrote, never what the
// old owner left there, as a buffer of Go's allocator would.
func TestRecycledGrowsIntoZeroes(t *testing.T) {
	for name, a := range map[string]interface {
		Allocate(int) []byte
		Reallocate(int, []byte) []byte
		Free([]byte)
	}{"Bounded": NewBounded(1<<10, 2, 1<<20), "Classes": &Classes{}} {
		old := a.Allocate(4 << 10)
		for i := range old[:cap(old)] {
			old[:cap(old)][i] = 0xA5
		}
		a.Free(old)
		var b []byte
		for range 100 { // a sync.Pool may drop what it was given; try again
			if b = a.Allocate(3 << 10); same(b, old) {
				break
			}
			a.Free(b)
			a.Free(old)
		}
		if !same(b, old) {
			t.Fatalf("%s: inconclusive: the freed buffer was not handed out again", name)
		}
		b = a.Reallocate(4<<10, b)
		if !same(b, old) {
			t.Fatalf("%s: inconclusive: Reallocate within the capacity copied", name)
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("%s: byte %d of the grown buffer is %#x, want 0", name, i, v)
			}
		}
	}
}
