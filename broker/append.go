package broker

import (
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"lakehouse/internal/fault"
)

// Fault hooks of the group commit.
var (
	hookInCommit = fault.Register("broker.in-commit",
		"records of a group written into the bbolt transaction, before it commits")
	hookInSeal = fault.Register("broker.in-seal",
		"open records of a partition sealed into compressed batches in the group's transaction, before it commits")
	hookAfterCommit = fault.Register("broker.after-commit",
		"bbolt transaction committed and fsync'd, before Append returns to its callers")
)

// maxMetaBytes bounds a Meta value: metadata is a producer's small state
// (a source position), never data.
const maxMetaBytes = 1 << 20

// appendReq is one Append call waiting for the committer.
type appendReq struct {
	b     Batch
	parts []int // resolved partition per record
	size  int
	pos   []Position
	done  chan error
}

// Append implements Log. Concurrent calls are coalesced into one bbolt
// transaction (group commit): each call still becomes durable atomically,
// and a call returns only after the transaction holding it is fsync'd.
func (d *DB) Append(ctx context.Context, b Batch) ([]Position, error) {
	req := &appendReq{b: b, parts: make([]int, len(b.Records)), done: make(chan error, 1)}
	for i := range b.Records {
		r := &b.Records[i]
		if n := len(r.Key) + len(r.Value); n > d.opts.MaxRecordBytes {
			return nil, fmt.Errorf("append record %d to %q (%d bytes, max %d): %w", i, r.Topic, n, d.opts.MaxRecordBytes, ErrRecordTooLarge)
		}
		n, err := d.partitions(r.Topic)
		if err != nil {
			return nil, fmt.Errorf("append record %d: %w", i, err)
		}
		p := r.Partition
		switch {
		case p == AnyPartition && len(r.Key) > 0:
			p = PartitionFor(r.Key, n)
		case p == AnyPartition:
			p = int(d.rr.Add(1) % uint64(n))
		case p < 0 || p >= n:
			return nil, fmt.Errorf("append record %d to %s/%d (%d partitions): %w", i, r.Topic, p, n, ErrBadPartition)
		}
		req.parts[i] = p
		req.size += encodedSize(r)
	}
	// What bbolt would refuse inside the group's transaction is refused
	// here, so one caller's bad batch never fails the others it would
	// have been committed with.
	for i, m := range b.Meta {
		if len(m.Key) == 0 || len(m.Key) > bolt.MaxKeySize || len(m.Value) > maxMetaBytes {
			return nil, fmt.Errorf("append meta %d (key %d bytes, value %d bytes; key 1 to %d, value at most %d): %w",
				i, len(m.Key), len(m.Value), bolt.MaxKeySize, maxMetaBytes, ErrBadMeta)
		}
	}
	if len(b.Records) == 0 && len(b.Meta) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.sendMu.RLock()
	d.mu.RLock()
	closed := d.closed
	d.mu.RUnlock()
	if closed {
		d.sendMu.RUnlock()
		return nil, ErrClosed
	}
	d.appendCh <- req
	d.sendMu.RUnlock()
	// Once queued the request is committed or failed by the committer;
	// returning early on ctx would leave the caller unsure whether it landed.
	if err := <-req.done; err != nil {
		return nil, err
	}
	return req.pos, nil
}

// commitLoop is the single committer: it takes the first waiting request,
// gathers every other request already queued (up to MaxGroupBytes), writes
// them all in one bbolt transaction and answers each.
func (d *DB) commitLoop() {
	defer close(d.stopped)
	var group []*appendReq
	for req := range d.appendCh {
		group = append(group[:0], req)
		size := req.size
	gather:
		for size < d.opts.MaxGroupBytes {
			select {
			case more, ok := <-d.appendCh:
				if !ok {
					break gather
				}
				group = append(group, more)
				size += more.size
			default:
				break gather
			}
		}
		stored, err := d.commitGroup(group)
		for _, r := range group {
			r.done <- err
		}
		if err == nil {
			// What the appends took: the records' encoded size as they are
			// stored one by one, or the growth of the stored batches.
			took := int64(size)
			if d.opts.Compress {
				took = max(stored, 0)
			}
			d.appended.Add(took)
			d.notify()
			d.noteMapped(took)
		}
	}
}

func (d *DB) commitGroup(group []*appendReq) (stored int64, err error) {
	if err := d.checkAppend(); err != nil {
		return 0, err
	}
	// bbolt keeps references to Put's value until the transaction commits,
	// so each encoded record gets its own bytes, carved from large slabs
	// that are reused by the next group once this one committed.
	var slab []byte
	used := 0
	defer d.keepSlabs()
	err = d.update(func(tx *bolt.Tx) error {
		if err := d.markFormat(tx); err != nil {
			return err
		}
		type tp struct {
			topic string
			p     int
		}
		states := map[tp]*partState{} // written back once at the end
		buckets := map[tp]*bolt.Bucket{}
		var order []tp // partitions in first-append order, so that commits are deterministic
		topicBuckets := map[string]*bolt.Bucket{}
		for _, req := range group {
			req.pos = make([]Position, len(req.b.Records))
			for i := range req.b.Records {
				r := &req.b.Records[i]
				p := req.parts[i]
				tb := topicBuckets[r.Topic]
				if tb == nil {
					tb = tx.Bucket(topicBucketName(r.Topic))
					if tb == nil {
						return fmt.Errorf("append to %q: %w", r.Topic, ErrUnknownTopic)
					}
					topicBuckets[r.Topic] = tb
				}
				key := tp{r.Topic, p}
				st := states[key]
				if st == nil {
					s, err := decodeState(tb.Get(partKey('s', p)))
					if err != nil {
						return fmt.Errorf("append to %s/%d: state: %w", r.Topic, p, err)
					}
					st = &s
					states[key] = st
					order = append(order, key)
				}
				yb := buckets[key]
				if yb == nil {
					var err error
					if yb, err = tb.CreateBucketIfNotExists(partKey('r', p)); err != nil {
						return fmt.Errorf("append to %s/%d: %w", r.Topic, p, err)
					}
					yb.FillPercent = 1.0 // append-only keys: pack pages full
					buckets[key] = yb
				}
				if need := encodedSize(r); cap(slab)-len(slab) < need {
					slab = d.nextSlab(&used, need)
				}
				at := len(slab)
				slab = encodeRecord(slab, r)
				enc := slab[at:len(slab):len(slab)]
				if err := yb.Put(offsetKey(st.end), enc); err != nil {
					return fmt.Errorf("append to %s/%d: %w", r.Topic, p, err)
				}
				req.pos[i] = Position{Partition: p, Offset: st.end}
				st.end++
				st.bytes += int64(len(r.Key) + len(r.Value))
				st.open += int64(len(enc))
				st.stored += int64(len(enc))
			}
			mb := tx.Bucket(bucketMeta)
			for _, m := range req.b.Meta {
				if err := mb.Put([]byte(m.Key), m.Value); err != nil {
					return fmt.Errorf("append meta %q: %w", m.Key, err)
				}
			}
		}
		for _, key := range order {
			tb := topicBuckets[key.topic]
			st := states[key]
			before := st.stored
			if err := d.seal(tb, buckets[key], key.p, st); err != nil {
				return fmt.Errorf("append to %s/%d: %w", key.topic, key.p, err)
			}
			stored += st.stored - before
			if err := tb.Put(partKey('s', key.p), st.encode()); err != nil {
				return err
			}
		}
		fault.Hit(hookInCommit)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("group commit: %w", err)
	}
	d.wrote()
	fault.Hit(hookAfterCommit)
	return stored, nil
}

// seal compresses partition p's open records (st.openFrom on, in bucket
// rb) into sealed batches of about d.opts.CompressBatchBytes each (see batch.go) once
// they hold that much, and deletes them from rb, in the commit's
// transaction (a crash leaves them open or sealed, never both). It updates
// st. A commit of a few records thus writes them as they are (the last
// leaf of rb, as a commit of the first format did), and a batch is
// compressed and written once, whole. Records of the first format (below
// openFrom) are left as they are, read as they are, until retention trims
// them.
func (d *DB) seal(tb, rb *bolt.Bucket, p int, st *partState) error {
	if !d.opts.Compress || st.open < int64(d.opts.CompressBatchBytes) {
		return nil
	}
	yb := rb
	zb, err := tb.CreateBucketIfNotExists(partKey('z', p)) // absent in a partition of format 1
	if err != nil {
		return err
	}
	zb.FillPercent = 1.0 // append-only keys: pack pages full
	// Sized from the partition's state, so the walk does not regrow them
	// (bounded, should the state be damaged: the walk checks the records).
	count := min(max(0, st.end-max(st.openFrom, st.start)), 1<<16)
	keys := make([][]byte, 0, count)
	recs := make([]batchRec, 0, count)
	raw := make([]byte, 0, min(max(0, st.open), 16<<20))
	c := yb.Cursor()
	for k, v := c.Seek(offsetKey(max(st.openFrom, st.start))); k != nil; k, v = c.Next() {
		ts, n := binary.Varint(v)
		kv, err := recordSize(v)
		if n <= 0 || err != nil {
			return fmt.Errorf("seal open record %d: %w", batchKeyOffset(k), errCorruptRecord)
		}
		keys = append(keys, k)
		recs = append(recs, batchRec{ts: ts, kv: kv, enc: len(v)})
		raw = append(raw, v...)
	}
	if len(keys) == 0 {
		return nil
	}
	first := batchKeyOffset(keys[0])
	for i, k := range keys {
		if batchKeyOffset(k) != first+int64(i) {
			return fmt.Errorf("seal open records from %d: offset %d missing: %w", first, first+int64(i), errCorruptRecord)
		}
	}
	for len(recs) > 0 {
		n, size := 0, 0
		for n < len(recs) && size < d.opts.CompressBatchBytes {
			size += recs[n].enc
			n++
		}
		v := encodeBatch(d.batchEnc, recs[:n], raw[:size])
		if err := zb.Put(offsetKey(first), v); err != nil {
			return err
		}
		st.stored += int64(len(v))
		first += int64(n)
		recs, raw = recs[n:], raw[size:]
	}
	for _, k := range keys {
		if err := yb.Delete(k); err != nil {
			return err
		}
	}
	st.stored -= st.open
	st.open = 0
	st.openFrom = st.end
	fault.Hit(hookInSeal)
	return nil
}

// slabSize is the size of one encode slab; keptSlabs how many stay
// allocated between groups (a group of ordinary size fits in them).
const (
	slabSize  = 1 << 20
	keptSlabs = 4
)

// nextSlab returns an empty slab of at least need bytes for the group being
// committed: a kept one not yet used by this group, or a new one.
// Committer goroutine only.
func (d *DB) nextSlab(used *int, need int) []byte {
	for *used < len(d.slabs) {
		s := d.slabs[*used][:0]
		*used++
		if cap(s) >= need {
			return s
		}
	}
	s := make([]byte, 0, max(need, slabSize))
	d.slabs = append(d.slabs, s)
	*used++
	return s
}

// keepSlabs runs after a group's transaction has ended (bbolt no longer
// refers to the slabs) and keeps at most keptSlabs of them for the next
// group, so a rare huge group does not pin its memory.
func (d *DB) keepSlabs() {
	if len(d.slabs) > keptSlabs {
		clear(d.slabs[keptSlabs:])
		d.slabs = d.slabs[:keptSlabs]
	}
}
