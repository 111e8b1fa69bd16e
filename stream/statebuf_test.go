package stream

import "testing"

// A processor keeps a small encoding buffer for its next save, and drops one
// that a large full snapshot grew.
func TestKeepStateBufferDropsLarge(t *testing.T) {
	small := make([]byte, 100, MaxKeptStateBuffer)
	if got := KeepStateBuffer(small); cap(got) != MaxKeptStateBuffer {
		t.Errorf("a buffer of %d bytes: kept %d, want it kept", cap(small), cap(got))
	}
	large := make([]byte, 10, 6<<20)
	if got := KeepStateBuffer(large); got != nil {
		t.Errorf("a buffer of %d bytes: kept %d, want it dropped", cap(large), cap(got))
	}
}
