package broker

import (
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Read implements Log.
func (d *DB) Read(ctx context.Context, topic string, partition int, from int64, max int) ([]Message, error) {
	var out []Message
	var read int64
	defer func() { d.noteMapped(read) }()
	err := d.eachRecord("read", topic, partition, from, max, true, func(want int64) { out = make([]Message, 0, want) },
		func(off int64, r storedRecord) error {
			m := Message{Topic: topic, Partition: partition, Offset: off}
			decode := decodeRecord
			if r.owned {
				decode = decodeOwned
			}
			if err := decode(r.enc, &m); err != nil {
				return err
			}
			out = append(out, m)
			read += r.stored
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Sizes implements Sizer. It reads only each record's length prefixes (a
// record of the first format) or its batch's header, so the values' pages
// are not read and no batch is decompressed.
func (d *DB) Sizes(ctx context.Context, topic string, partition int, from int64, max int) ([]int64, error) {
	var out []int64
	err := d.eachRecord("sizes", topic, partition, from, max, false, func(want int64) { out = make([]int64, 0, want) },
		func(_ int64, r storedRecord) error {
			out = append(out, r.kv)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// storedRecord is one record as eachRecord finds it.
type storedRecord struct {
	enc    []byte // its encoding (encodeRecord); nil unless values were asked for
	owned  bool   // enc is the caller's (a decompressed batch), not the transaction's
	kv     int64  // len(Key)+len(Value)
	stored int64  // file bytes read for it: a first-format record's, a batch's on its first record read
}

// eachRecord calls fn with each stored record of topic/partition from
// offset from, at most max of them (0: up to the end), in one read
// transaction; first it calls start with how many there will be. With
// values, fn gets each record's encoding (batches are decompressed);
// without, only its size. It refuses an offset outside the partition's
// [start, end] and reports a gap, a short range or a damaged batch as a
// corrupt log, naming the file. op names the operation in errors.
//
// A partition's records are, in offset order: those of the first format
// (one bbolt value per record, bucket 'r', written before batches), the
// sealed batches (bucket 'z'), the open records (bucket 'r' again, one
// value per record, not yet sealed in a batch: see seal), then those of the
// tail (tail.go), which the partition's state does not count.
func (d *DB) eachRecord(op, topic string, partition int, from int64, max int, values bool, start func(want int64), fn func(off int64, r storedRecord) error) error {
	n, err := d.partitions(topic)
	if err != nil {
		return err
	}
	if partition < 0 || partition >= n {
		return fmt.Errorf("%s %s/%d: %w", op, topic, partition, ErrBadPartition)
	}
	tail, _ := d.tailOf(topic, partition) // before the transaction: see tail.go
	return d.view(func(tx *bolt.Tx) error {
		tb := tx.Bucket(topicBucketName(topic))
		st, err := decodeState(tb.Get(partKey('s', partition)))
		if err != nil {
			return err
		}
		stored := st.end // the records of the file's partition end here, the tail's after
		if tail.from > st.end {
			return fmt.Errorf("%s %s/%d in %s: tail from %d beyond the end %d: %w", op, topic, partition, d.path, tail.from, st.end, errCorruptRecord)
		}
		if tail.end() > st.end {
			st.end = tail.end()
		}
		switch {
		case from < st.start:
			return fmt.Errorf("%s %s/%d at %d (start %d): %w", op, topic, partition, from, st.start, ErrOffsetTrimmed)
		case from > st.end:
			return fmt.Errorf("%s %s/%d at %d (end %d): %w", op, topic, partition, from, st.end, ErrOffsetOutOfRange)
		}
		want := st.end - from
		if max > 0 && int64(max) < want {
			want = int64(max)
		}
		if want == 0 {
			return nil
		}
		start(want)
		next, end := from, from+want
		inFile := min(end, stored)
		plain := func(bucket []byte) error {
			rb := tb.Bucket(bucket)
			if rb == nil {
				return nil
			}
			c := rb.Cursor()
			for k, v := c.Seek(offsetKey(next)); k != nil && next < inFile; k, v = c.Next() {
				if int64(binary.BigEndian.Uint64(k)) != next {
					break // the rest is elsewhere
				}
				r := storedRecord{enc: v, stored: int64(len(v))}
				if !values {
					if r.kv, err = recordSize(v); err != nil {
						return fmt.Errorf("%s %s/%d@%d in %s: %w", op, topic, partition, next, d.path, err)
					}
					r.enc = nil
				}
				if err := fn(next, r); err != nil {
					return fmt.Errorf("%s %s/%d@%d in %s: %w", op, topic, partition, next, d.path, err)
				}
				next++
			}
			return nil
		}
		if err := plain(partKey('r', partition)); err != nil {
			return err
		}
		if next < inFile {
			if next, err = d.eachBatched(tb.Bucket(partKey('z', partition)), op, topic, partition, next, inFile, values, fn); err != nil {
				return err
			}
		}
		if next < inFile {
			if err := plain(partKey('r', partition)); err != nil {
				return err
			}
		}
		for ; next >= inFile && next < end; next++ {
			if next < tail.from || next >= tail.end() {
				break
			}
			i := next - tail.from
			// Shared by every reader: decoded as a copy. In memory: nothing of the map read.
			r := storedRecord{kv: tail.kvs[i]}
			if values {
				r.enc = tail.encs[i]
			}
			if err := fn(next, r); err != nil {
				return fmt.Errorf("%s %s/%d@%d (tail) in %s: %w", op, topic, partition, next, d.path, err)
			}
		}
		if next < end {
			return fmt.Errorf("%s %s/%d in %s: offset %d missing (%d records before end %d): %w",
				op, topic, partition, d.path, next, end-next, end, errCorruptRecord)
		}
		return nil
	})
}

// seekBatch returns the batch of zb that holds off or, when none does, the
// one before or after it (the caller checks the range); nil when zb holds
// none.
func seekBatch(c *bolt.Cursor, off int64) (k, v []byte) {
	k, v = c.Seek(offsetKey(off))
	switch {
	case k == nil:
		return c.Last()
	case batchKeyOffset(k) > off:
		if pk, pv := c.Prev(); pk != nil {
			return pk, pv
		}
	}
	return k, v
}

// eachBatched is eachRecord over the sealed batches of bucket zb, from
// offset next until end or the first offset no batch holds (the open
// records after them); it returns that offset.
func (d *DB) eachBatched(zb *bolt.Bucket, op, topic string, partition int, next, end int64, values bool, fn func(off int64, r storedRecord) error) (int64, error) {
	if zb == nil {
		return next, nil
	}
	c := zb.Cursor()
	for k, v := seekBatch(c, next); k != nil && next < end; k, v = c.Next() {
		first := batchKeyOffset(k)
		h, err := parseBatch(v)
		if err != nil {
			return next, fmt.Errorf("%s %s/%d: batch at offsets %d.. in %s: %w: %w", op, topic, partition, first, d.path, ErrNotBroker, err)
		}
		last := first + int64(len(h.recs)) - 1
		if next < first || next > last {
			return next, nil
		}
		var raw []byte
		if values {
			if raw, err = h.raw(); err != nil {
				return next, fmt.Errorf("%s %s/%d: batch at offsets %d..%d in %s: %w: %w", op, topic, partition, first, last, d.path, ErrNotBroker, err)
			}
		}
		pos := 0
		for _, r := range h.recs[:next-first] {
			pos += r.enc
		}
		stored := int64(len(v))
		for _, br := range h.recs[next-first:] {
			if next >= end {
				break
			}
			r := storedRecord{owned: true, kv: br.kv, stored: stored}
			stored = 0
			if values {
				r.enc = raw[pos : pos+br.enc : pos+br.enc]
			}
			pos += br.enc
			if err := fn(next, r); err != nil {
				return next, fmt.Errorf("%s %s/%d@%d (batch at offsets %d..%d) in %s: %w", op, topic, partition, next, first, last, d.path, err)
			}
			next++
		}
	}
	return next, nil
}

// Wait implements Log.
func (d *DB) Wait(ctx context.Context, topic string, partition int, offset int64) error {
	for {
		d.notifyMu.Lock()
		ch := d.changed
		d.notifyMu.Unlock()
		offs, err := d.Offsets(ctx, topic)
		if err != nil {
			return err
		}
		if partition < 0 || partition >= len(offs) {
			return fmt.Errorf("wait %s/%d: %w", topic, partition, ErrBadPartition)
		}
		if offs[partition].End > offset {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-d.stopped:
			return ErrClosed
		}
	}
}

func (d *DB) notify() {
	d.notifyMu.Lock()
	close(d.changed)
	d.changed = make(chan struct{})
	d.notifyMu.Unlock()
}
