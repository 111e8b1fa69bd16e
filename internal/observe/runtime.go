package observe

import "runtime/metrics"

// Runtime is a process's Go runtime, read from runtime/metrics (no
// stop-the-world).
type Runtime struct {
	HeapInUseBytes uint64 `json:"heap_in_use_bytes"` // spans in use: objects plus their free slots (MemStats.HeapInuse)
	HeapObjects    uint64 `json:"heap_objects"`      // objects allocated and not yet freed
	LiveHeapBytes  uint64 `json:"live_heap_bytes"`   // heap the last GC cycle marked live
	// HeldBytes is all the memory the Go runtime has mapped and not handed
	// back to the OS (heap, stacks, runtime metadata): the part of the
	// anonymous RSS that is Go's; the rest is C code (DuckDB) and libc.
	HeldBytes  uint64 `json:"held_bytes,omitempty"`
	GCCycles   uint64 `json:"gc_cycles"` // completed GC cycles
	Goroutines uint64 `json:"goroutines"`
}

// ReadRuntime reads this process's heap and goroutine figures from
// runtime/metrics, which, unlike runtime.ReadMemStats, does not stop the
// world.
func ReadRuntime() *Runtime {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/gc/heap/objects:objects"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/sched/goroutines:goroutines"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(samples)
	v := func(i int) uint64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return samples[i].Value.Uint64()
	}
	return &Runtime{
		HeapInUseBytes: v(0) + v(1),
		HeapObjects:    v(2),
		LiveHeapBytes:  v(3),
		GCCycles:       v(4),
		Goroutines:     v(5),
		HeldBytes:      v(6) - min(v(6), v(7)),
	}
}
