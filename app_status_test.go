package main

import (
	"runtime"
	"testing"
)

// TestRuntimeStatus: the runtime section of /status is filled from
// runtime/metrics (each figure non-zero in a running process after a GC).
func TestRuntimeStatus(t *testing.T) {
	runtime.GC()
	rs := runtimeStatus()
	if rs.HeapInUseBytes == 0 || rs.HeapObjects == 0 || rs.LiveHeapBytes == 0 || rs.GCCycles == 0 || rs.Goroutines == 0 {
		t.Fatalf("runtime status has a zero figure: %+v", rs)
	}
	if rs.LiveHeapBytes > rs.HeapInUseBytes {
		t.Errorf("live heap %d above heap in use %d", rs.LiveHeapBytes, rs.HeapInUseBytes)
	}
}
