package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/broker"
)

// DefaultReadChunk is how many messages BrokerSource asks the log for per
// Read call.
const DefaultReadChunk = 10_000

// NextOffsets is a broker source position: for each partition, the
// offset of the next record to read. Its Offset encoding is a JSON object
// keyed by partition number, e.g. {"0":120,"1":98}.
type NextOffsets map[int]int64

// Offset encodes the position deterministically.
func (p NextOffsets) Offset() Offset {
	b, _ := json.Marshal(map[int]int64(p)) // map keys are sorted
	return Offset(b)
}

// Sum returns the offsets summed over partitions.
func (p NextOffsets) Sum() int64 {
	var n int64
	for _, o := range p {
		n += o
	}
	return n
}

// ParsePartitionOffsets decodes an Offset written by NextOffsets.Offset.
func ParsePartitionOffsets(o Offset) (NextOffsets, error) {
	p := NextOffsets{}
	if o == "" {
		return p, nil
	}
	if err := json.Unmarshal([]byte(o), &p); err != nil {
		return nil, fmt.Errorf("parse partition offsets %q: %w", o, err)
	}
	return p, nil
}

// BrokerSource reads every partition of one topic of a broker.Log and turns
// messages into Arrow records of Schema. Columns are filled by name:
// broker_partition, broker_offset, broker_ts (the message timestamp), key,
// value and ingest_ts (the time the batch was read), and those Headers
// names from a message header; other columns are null.
type BrokerSource struct {
	Log    broker.Log
	Topic  string
	Schema *arrow.Schema
	// Headers maps a column to the message header it holds (a missing
	// header is null, or empty in a required column).
	Headers map[string]string
	// ReadChunk is the max messages per Log.Read call (DefaultReadChunk).
	ReadChunk int
	// Alloc builds the records (memory.DefaultAllocator).
	Alloc memory.Allocator
	// Now stamps ingest_ts (time.Now).
	Now func() time.Time
}

// NewBrokerSource returns a BrokerSource with defaults filled.
func NewBrokerSource(log broker.Log, topic string, schema *arrow.Schema) *BrokerSource {
	return &BrokerSource{Log: log, Topic: topic, Schema: schema, ReadChunk: DefaultReadChunk,
		Alloc: newPoolAllocator(), Now: time.Now}
}

// Earliest returns each partition's Start.
func (s *BrokerSource) Earliest(ctx context.Context) (Offset, error) {
	parts, err := s.Log.Offsets(ctx, s.Topic)
	if err != nil {
		return "", fmt.Errorf("read offsets of %s: %w", s.Topic, err)
	}
	p := NextOffsets{}
	for _, po := range parts {
		p[po.Partition] = po.Start
	}
	return p.Offset(), nil
}

// Plan caps the batch at limit.Units records, shared between partitions in
// proportion to their backlog (as Spark's Kafka source does), and then at
// limit.Bytes of record keys and values: records are taken whole, in the
// same proportions, until the next one would pass the cap (always at least
// one record). The sizes come from the log's Sizer when it has one, else
// from reading the records; they are looked at unless the partitions'
// Bytes, all known, fit the cap.
func (s *BrokerSource) Plan(ctx context.Context, start Offset, limit Limit) (Offset, int64, error) {
	from, err := ParsePartitionOffsets(start)
	if err != nil {
		return "", 0, err
	}
	parts, err := s.Log.Offsets(ctx, s.Topic)
	if err != nil {
		return "", 0, fmt.Errorf("read offsets of %s: %w", s.Topic, err)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].Partition < parts[j].Partition })
	avail := make([]int64, len(parts))
	var total, held int64
	known := true // every partition tells its key and value bytes
	for i, po := range parts {
		f, ok := from[po.Partition]
		if !ok {
			f = po.Start
		}
		if f < po.Start || f > po.End {
			return "", 0, fmt.Errorf("plan %s partition %d: position %d outside [%d, %d]: %w",
				s.Topic, po.Partition, f, po.Start, po.End, ErrSourceBehind)
		}
		from[po.Partition] = f
		avail[i] = po.End - f
		total += avail[i]
		held += po.Bytes
		known = known && po.BytesKnown()
	}
	max := limit.Units
	take := make([]int64, len(parts))
	if total <= max {
		copy(take, avail)
	} else {
		var given int64
		for i := range parts {
			take[i] = avail[i] * max / total
			given += take[i]
		}
		for i := 0; given < max; i = (i + 1) % len(parts) {
			if take[i] < avail[i] {
				take[i]++
				given++
			}
		}
	}
	// Everything the partitions hold fits: no need to look at sizes. Only
	// a Log that counts the bytes exactly (the embedded one) says so; on
	// Kafka they are unknown (compressed batches), and the sizes decide.
	if limit.Bytes > 0 && (!known || held > limit.Bytes) {
		if err := s.capBytes(ctx, parts, from, take, limit.Bytes); err != nil {
			return "", 0, err
		}
	}
	end := NextOffsets{}
	var n int64
	for i, po := range parts {
		end[po.Partition] = from[po.Partition] + take[i]
		n += take[i]
	}
	if n == 0 {
		return from.Offset(), 0, nil
	}
	return end.Offset(), n, nil
}

// capBytes lowers take (offsets per partition, from from) so that the
// records' bytes stay within maxBytes. Records are admitted one at a time
// from the partition that is least far through its share (i before j when
// (c[i]+1)/have[i] < (c[j]+1)/have[j], have being the records in the
// planned range), so the cut keeps the proportions of take; the first
// record that does not fit ends the batch, unless it is the first of all.
// A partition cut short ends at its first record left out; one whose
// records all fit keeps its whole range (on a sparse log, offsets after
// the last record that hold none).
func (s *BrokerSource) capBytes(ctx context.Context, parts []broker.PartitionOffsets, from NextOffsets, take []int64, maxBytes int64) error {
	recs := make([][]sizedOffset, len(parts))
	sparse := broker.IsSparse(s.Log)
	for i, po := range parts {
		if take[i] == 0 {
			continue
		}
		rs, err := s.sizes(ctx, po.Partition, from[po.Partition], take[i])
		if err != nil {
			return err
		}
		if !sparse && int64(len(rs)) != take[i] {
			return fmt.Errorf("plan %s partition %d: %d record sizes from %d, want %d: %w",
				s.Topic, po.Partition, len(rs), from[po.Partition], take[i], ErrSourceBehind)
		}
		recs[i] = rs
	}
	got := make([]int64, len(parts))
	var bytes, n int64
	for {
		best := -1
		for i := range parts {
			have := int64(len(recs[i]))
			if got[i] >= have {
				continue
			}
			// (got[i]+1)/have[i] < (got[best]+1)/have[best], without division.
			if best < 0 || (got[i]+1)*int64(len(recs[best])) < (got[best]+1)*have {
				best = i
			}
		}
		if best < 0 {
			break // everything planned fits
		}
		sz := recs[best][got[best]].size
		if n > 0 && bytes+sz > maxBytes {
			break
		}
		bytes += sz
		got[best]++
		n++
	}
	for i, po := range parts {
		if got[i] < int64(len(recs[i])) {
			take[i] = recs[i][got[i]].offset - from[po.Partition]
		}
	}
	return nil
}

// sizedOffset is one record's offset and key+value bytes.
type sizedOffset struct {
	offset, size int64
}

// sizes returns the offsets and key+value bytes of the records of
// partition p in off..off+n-1: all n of them on a dense log, those that
// exist on a sparse one.
func (s *BrokerSource) sizes(ctx context.Context, p int, off, n int64) ([]sizedOffset, error) {
	if sz, ok := s.Log.(broker.Sizer); ok && !broker.IsSparse(s.Log) {
		got, err := sz.Sizes(ctx, s.Topic, p, off, int(n))
		if err != nil {
			return nil, fmt.Errorf("plan %s/%d at %d: record sizes: %w", s.Topic, p, off, err)
		}
		out := make([]sizedOffset, len(got))
		for i, size := range got {
			out[i] = sizedOffset{offset: off + int64(i), size: size}
		}
		return out, nil
	}
	chunk := s.ReadChunk
	if chunk <= 0 {
		chunk = DefaultReadChunk
	}
	out := make([]sizedOffset, 0, n)
	for end := off + n; off < end; {
		msgs, err := s.Log.Read(ctx, s.Topic, p, off, int(min(int64(chunk), end-off)))
		if err != nil {
			return nil, fmt.Errorf("plan %s/%d at %d: read record sizes: %w", s.Topic, p, off, err)
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			if m.Offset >= end {
				return out, nil
			}
			out = append(out, sizedOffset{offset: m.Offset, size: int64(len(m.Key) + len(m.Value))})
		}
		off = msgs[len(msgs)-1].Offset + 1
	}
	return out, nil
}

// Wait returns when any partition has records beyond start.
func (s *BrokerSource) Wait(ctx context.Context, start Offset) error {
	from, err := ParsePartitionOffsets(start)
	if err != nil {
		return err
	}
	parts, err := s.Log.Offsets(ctx, s.Topic)
	if err != nil {
		return fmt.Errorf("read offsets of %s: %w", s.Topic, err)
	}
	for _, po := range parts {
		if f, ok := from[po.Partition]; !ok || po.End > f {
			return nil
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, len(parts))
	for _, po := range parts {
		go func(p int, off int64) { done <- s.Log.Wait(wctx, s.Topic, p, off) }(po.Partition, from[po.Partition])
	}
	var first error
	for range parts {
		err := <-done
		if err == nil {
			return nil
		}
		if first == nil || !errors.Is(err, context.Canceled) {
			first = err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("wait for %s: %w", s.Topic, first)
}

// Lag returns the records beyond end, summed over partitions.
func (s *BrokerSource) Lag(ctx context.Context, end Offset) (int64, error) {
	at, err := ParsePartitionOffsets(end)
	if err != nil {
		return 0, err
	}
	parts, err := s.Log.Offsets(ctx, s.Topic)
	if err != nil {
		return 0, fmt.Errorf("read offsets of %s: %w", s.Topic, err)
	}
	var lag int64
	for _, po := range parts {
		lag += po.End - at[po.Partition]
	}
	return lag, nil
}

// Read reads (start, end] of every partition, the partitions in parallel,
// into one record per partition (in partition order).
func (s *BrokerSource) Read(ctx context.Context, start, end Offset) ([]arrow.RecordBatch, int64, error) {
	from, err := ParsePartitionOffsets(start)
	if err != nil {
		return nil, 0, err
	}
	to, err := ParsePartitionOffsets(end)
	if err != nil {
		return nil, 0, err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ingest := now().UTC()
	parts := make([]int, 0, len(to))
	for p, e := range to {
		if e > from[p] {
			parts = append(parts, p)
		}
	}
	sort.Ints(parts)
	type result struct {
		rec  arrow.RecordBatch
		size int64
		err  error
	}
	res := make([]result, len(parts))
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res[i].rec, res[i].size, res[i].err = s.readPartition(ctx, p, from[p], to[p], ingest)
		}()
	}
	wg.Wait()
	var out []arrow.RecordBatch
	var size int64
	var firstErr error
	for _, r := range res {
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
		if r.rec != nil {
			out = append(out, r.rec)
		}
		size += r.size
	}
	if firstErr != nil {
		release(out)
		return nil, 0, firstErr
	}
	return out, size, nil
}

// readPartition reads offsets [from, stop) of partition p into one record.
func (s *BrokerSource) readPartition(ctx context.Context, p int, from, stop int64, ingest time.Time) (arrow.RecordBatch, int64, error) {
	chunk := s.ReadChunk
	if chunk <= 0 {
		chunk = DefaultReadChunk
	}
	alloc := s.Alloc
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	// A dense log holds a record at every offset of the range; on a sparse
	// one (Kafka) offsets may skip, and the range may end with offsets
	// that hold none (a transaction's commit marker).
	sparse := broker.IsSparse(s.Log)
	var size, keyBytes int64
	msgs := make([]broker.Message, 0, stop-from)
read:
	for off := from; off < stop; {
		n := int(min(int64(chunk), stop-off))
		got, err := s.Log.Read(ctx, s.Topic, p, off, n)
		if errors.Is(err, broker.ErrOffsetTrimmed) {
			return nil, 0, fmt.Errorf("read %s/%d at %d: %w: %w", s.Topic, p, off, ErrSourceBehind, err)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read %s/%d at %d: %w", s.Topic, p, off, err)
		}
		if len(got) == 0 {
			if sparse {
				break
			}
			return nil, 0, fmt.Errorf("read %s/%d at %d: no messages before %d: %w", s.Topic, p, off, stop, ErrSourceBehind)
		}
		for _, m := range got {
			if m.Offset >= stop {
				break read
			}
			if m.Offset != off && (!sparse || m.Offset < off) {
				return nil, 0, fmt.Errorf("read %s/%d: got offset %d, want %d: %w", s.Topic, p, m.Offset, off, ErrSourceBehind)
			}
			msgs = append(msgs, m)
			size += int64(len(m.Value) + len(m.Key))
			keyBytes += int64(len(m.Key))
			off = m.Offset + 1
		}
	}
	rb, err := newRowBuilder(alloc, s.Schema, s.Headers)
	if err != nil {
		return nil, 0, err
	}
	defer rb.release()
	// Reserve exactly once: growing Arrow buffers by doubling costs more
	// than reading the log.
	rb.reserve(len(msgs), int(keyBytes), int(size-keyBytes))
	for _, m := range msgs {
		rb.add(m, ingest)
	}
	return rb.build(), size, nil
}
