package stream

import "lakehouse/internal/arrowpool"

// newPoolAllocator is the Arrow allocator of a bronze batch's rows: a batch
// builds tens of MB of Arrow buffers and releases them after the table
// commit, and fresh memory for each batch costs more (page faults, zeroing,
// GC) than reading the broker. What it keeps is bounded in bytes as well as
// per size class: after a burst of large events it held a dozen buffers of
// each class up to the largest batch, hundreds of MB that the live stream
// never used again.
func newPoolAllocator() *arrowpool.Bounded {
	return arrowpool.NewBounded(poolMinSize, poolPerClass, poolMaxBytes)
}

const (
	poolMinSize  = 1 << 20 // below this, plain Go allocation
	poolPerClass = 12      // buffers kept per size class (4 partitions x 2 batches in flight, + slack)
	// poolMaxBytes bounds the bytes kept: two byte-capped batches (the one
	// in flight and the one read ahead).
	poolMaxBytes = 2 * DefaultMaxBytesPerTrigger
)
