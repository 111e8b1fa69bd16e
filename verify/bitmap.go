package verify

import (
	"context"
	"fmt"
	"math/bits"

	"lakehouse/broker"
)

// offsetBits marks the offsets of one partition in [0, end) that bronze
// holds: seen once (seen) and seen more than once (twice). Two bits an
// offset, where a map of offsets costs some 40 bytes: 250 KB for a million
// offsets. It covers [0, end) rather than the broker's [start, end) so
// that offsets retention has trimmed from the broker, which bronze may
// still hold, are counted (and their duplicates found) all the same.
type offsetBits struct {
	end         int64
	seen, twice []uint64
}

func newOffsetBits(end int64) *offsetBits {
	n := (max(end, 0) + 63) / 64
	return &offsetBits{end: end, seen: make([]uint64, n), twice: make([]uint64, n)}
}

// add marks off. It returns false, marking nothing, for an offset outside
// [0, end), and reports whether off was already marked.
func (b *offsetBits) add(off int64) (inRange, again bool) {
	if off < 0 || off >= b.end {
		return false, false
	}
	w, m := off/64, uint64(1)<<(off%64)
	if b.seen[w]&m != 0 {
		b.twice[w] |= m
		return true, true
	}
	b.seen[w] |= m
	return true, false
}

// distinct is the number of offsets marked.
func (b *offsetBits) distinct() int64 {
	var n int
	for _, w := range b.seen {
		n += bits.OnesCount64(w)
	}
	return int64(n)
}

// high is the highest offset marked, or -1.
func (b *offsetBits) high() int64 {
	for w := len(b.seen) - 1; w >= 0; w-- {
		if b.seen[w] != 0 {
			return int64(w)*64 + int64(63-bits.LeadingZeros64(b.seen[w]))
		}
	}
	return -1
}

// absent returns how many offsets of [from, to) are not marked and the
// first limit of them.
func (b *offsetBits) absent(from, to int64, limit int) (int64, []int64) {
	var n int64
	var first []int64
	for off := max(from, 0); off < min(to, b.end); off++ {
		if b.seen[off/64]&(1<<(off%64)) == 0 {
			n++
			if len(first) < limit {
				first = append(first, off)
			}
		}
	}
	return n, first
}

// repeated returns the first limit offsets marked more than once.
func (b *offsetBits) repeated(limit int) []int64 {
	var out []int64
	for w, word := range b.twice {
		for word != 0 && len(out) < limit {
			i := bits.TrailingZeros64(word)
			out = append(out, int64(w)*64+int64(i))
			word &^= 1 << i
		}
		if len(out) == limit {
			break
		}
	}
	return out
}

// heldOffsets is the offsets each partition of a topic holds: nil on a
// dense log, where every offset of a partition's Start..End-1 holds a
// record; on a sparse one (Kafka: transaction markers and aborted records
// take offsets) a bitmap per partition of the offsets the log returned.
// The broker's records are the source of truth, never End-Start.
type heldOffsets []*offsetBits

// readHeld reads which offsets the partitions in offs hold.
func readHeld(ctx context.Context, log broker.Log, topic string, offs []broker.PartitionOffsets) (heldOffsets, error) {
	if !broker.IsSparse(log) {
		return nil, nil
	}
	h := make(heldOffsets, len(offs))
	for p, o := range offs {
		h[p] = newOffsetBits(o.End)
		if err := broker.EachHeld(ctx, log, topic, o, o.Start, o.End, func(off int64) { h[p].add(off) }); err != nil {
			return nil, fmt.Errorf("read the offsets %s holds: %w", topic, err)
		}
	}
	return h, nil
}

// count returns how many offsets of [from, to) partition p holds.
func (h heldOffsets) count(p int, from, to int64) int64 {
	if from >= to {
		return 0
	}
	if h == nil {
		return to - from
	}
	b := h[p]
	var n int64
	for off := max(from, 0); off < min(to, b.end); off++ {
		if b.seen[off/64]&(1<<(off%64)) != 0 {
			n++
		}
	}
	return n
}

// absent returns how many offsets of [from, to) partition p holds that b
// does not mark, and the first limit of them.
func (h heldOffsets) absent(p int, b *offsetBits, from, to int64, limit int) (int64, []int64) {
	if h == nil {
		return b.absent(from, to, limit)
	}
	held := h[p]
	var n int64
	var first []int64
	for off := max(from, 0); off < min(to, b.end, held.end); off++ {
		w, m := off/64, uint64(1)<<(off%64)
		if held.seen[w]&m != 0 && b.seen[w]&m == 0 {
			n++
			if len(first) < limit {
				first = append(first, off)
			}
		}
	}
	return n, first
}
