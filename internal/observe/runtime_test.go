package observe

import (
	"runtime"
	"testing"
)

// TestReadRuntime: the runtime section of /status is filled from
// runtime/metrics (each figure non-zero in a running process after a GC).
func TestReadRuntime(t *testing.T) {
	runtime.GC()
	rs := ReadRuntime()
	if rs.HeapInUseBytes == 0 || rs.HeapObjects == 0 || rs.LiveHeapBytes == 0 || rs.GCCycles == 0 || rs.Goroutines == 0 {
		t.Fatalf("runtime status has a zero figure: %+v", rs)
	}
	if rs.LiveHeapBytes > rs.HeapInUseBytes {
		t.Errorf("live heap %d above heap in use %d", rs.LiveHeapBytes, rs.HeapInUseBytes)
	}
}
