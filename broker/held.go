package broker

import (
	"context"
	"fmt"
	"sync"
)

// heldChunk is how many records EachHeld asks Read for at a time.
const heldChunk = 10_000

// EachHeld calls fn with the offset of every record partition po of
// topic holds in from..to-1, in order, within po (the partition's offsets
// as Offsets reported them). On a dense Log that is every offset of the
// range within po's Start..End-1; on a sparse one (Kafka) it reads the
// records to find them. Offsets below Start (trimmed by retention) are
// skipped, not an error.
func EachHeld(ctx context.Context, l Log, topic string, po PartitionOffsets, from, to int64, fn func(off int64)) error {
	from, to = max(from, po.Start), min(to, po.End)
	if !IsSparse(l) {
		for off := from; off < to; off++ {
			fn(off)
		}
		return nil
	}
	for off := from; off < to; {
		msgs, err := l.Read(ctx, topic, po.Partition, off, heldChunk)
		if err != nil {
			return fmt.Errorf("read %s/%d at %d: %w", topic, po.Partition, off, err)
		}
		if len(msgs) == 0 {
			return nil // nothing readable before End
		}
		for _, m := range msgs {
			if m.Offset >= to {
				return nil
			}
			fn(m.Offset)
		}
		off = msgs[len(msgs)-1].Offset + 1
	}
	return nil
}

// CountHeld returns how many records partition po of topic holds in
// from..to-1 (see EachHeld): arithmetic on a dense Log, a read on a sparse
// one.
func CountHeld(ctx context.Context, l Log, topic string, po PartitionOffsets, from, to int64) (int64, error) {
	if !IsSparse(l) {
		return max(0, min(to, po.End)-max(from, po.Start)), nil
	}
	var n int64
	err := EachHeld(ctx, l, topic, po, from, to, func(int64) { n++ })
	return n, err
}

// HeldCounter counts the records each topic of a Log holds, as TopicInfo's
// Messages does on a dense Log; on a sparse one it reads only the records
// appended since its last count (it recounts a partition whose Start
// moved). It is safe for concurrent use; the zero value is not: set Log.
type HeldCounter struct {
	Log   Log
	mu    sync.Mutex
	marks map[string][]heldMark
}

// heldMark is what a partition held in start..upTo-1 at the last count.
type heldMark struct{ start, upTo, n int64 }

// Count returns the records t's partitions hold.
func (c *HeldCounter) Count(ctx context.Context, t TopicInfo) (int64, error) {
	if !IsSparse(c.Log) {
		return t.Messages(), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marks == nil {
		c.marks = map[string][]heldMark{}
	}
	marks := c.marks[t.Name]
	if len(marks) != len(t.Partitions) {
		marks = make([]heldMark, len(t.Partitions))
	}
	var total int64
	for i, po := range t.Partitions {
		m := marks[i]
		if m.start != po.Start || m.upTo < po.Start || m.upTo > po.End {
			m = heldMark{start: po.Start, upTo: po.Start}
		}
		n, err := CountHeld(ctx, c.Log, t.Name, po, m.upTo, po.End)
		if err != nil {
			return 0, err
		}
		m.n += n
		m.upTo = po.End
		marks[i] = m
		total += m.n
	}
	c.marks[t.Name] = marks
	return total, nil
}
