package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"lakehouse/internal/fault"
)

// Fault hooks of the group commit.
var (
	hookInCommit = fault.Register("broker.in-commit",
		"records of a group written into the bbolt transaction, before it commits")
	hookInSeal = fault.Register("broker.in-seal",
		"open records of a partition sealed into compressed batches in the group's transaction, before it commits")
	hookInTail = fault.Register("broker.in-tail",
		"a group written as a frame of the open tail in its transaction, before it commits")
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
	defer d.keepSlabs()
	var (
		toTail []tailRecord // the group's records, when they went into the tail
		metas  []Meta       // the group's metadata, likewise
		sealed bool         // the tail went into the partitions
	)
	err = d.update(func(tx *bolt.Tx) error {
		toTail, metas, sealed = nil, nil, false
		if err := d.markFormat(tx); err != nil {
			return err
		}
		parts := map[tailKey]*pendingPart{} // the states are written back once at the end
		var order []tailKey                 // partitions in first-append order, so that commits are deterministic
		var groupEnc int64
		for _, req := range group {
			req.pos = make([]Position, len(req.b.Records))
			for i := range req.b.Records {
				r := &req.b.Records[i]
				k := tailKey{r.Topic, req.parts[i]}
				pp := parts[k]
				if pp == nil {
					var err error
					if pp, err = d.pendingPart(tx, k); err != nil {
						return err
					}
					parts[k] = pp
					order = append(order, k)
				}
				req.pos[i] = Position{Partition: k.p, Offset: pp.next}
				pp.next++
				n := int64(encodedSize(r))
				pp.enc += n
				groupEnc += n
			}
		}
		seal := !d.opts.Compress || d.tail.frames >= maxTailFrames || d.tail.bytes+groupEnc >= maxTailBytes
		for _, k := range order {
			if pp := parts[k]; pp.st.open+pp.tail.enc+pp.enc >= int64(d.opts.CompressBatchBytes) {
				seal = true
			}
		}
		if !seal {
			var err error
			toTail, metas, err = d.putTail(tx, group, groupEnc)
			return err
		}
		sealed = true
		var err error
		stored, err = d.putSealed(tx, group, parts, order)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("group commit: %w", err)
	}
	d.wrote()
	d.tailMu.Lock()
	switch {
	case sealed:
		d.tail = newOpenTail(0)
	default:
		d.tail.add(toTail, metas)
		for _, r := range toTail {
			stored += int64(len(r.enc))
		}
	}
	d.tailMu.Unlock()
	fault.Hit(hookAfterCommit)
	return stored, nil
}

// pendingPart is a partition a group commit appends to.
type pendingPart struct {
	tb   *bolt.Bucket
	st   partState
	tail tailPart // its records in the tail (a copy)
	next int64    // the offset of the group's next record in it
	enc  int64    // the group's encoded bytes in it
}

func (d *DB) pendingPart(tx *bolt.Tx, k tailKey) (*pendingPart, error) {
	tb := tx.Bucket(topicBucketName(k.topic))
	if tb == nil {
		return nil, fmt.Errorf("append to %q: %w", k.topic, ErrUnknownTopic)
	}
	st, err := decodeState(tb.Get(partKey('s', k.p)))
	if err != nil {
		return nil, fmt.Errorf("append to %s/%d: state: %w", k.topic, k.p, err)
	}
	pp := &pendingPart{tb: tb, st: st, next: st.end}
	if t := d.tail.parts[k]; t != nil {
		if t.from != st.end {
			return nil, fmt.Errorf("append to %s/%d: tail from %d, state end %d: %w", k.topic, k.p, t.from, st.end, errCorruptRecord)
		}
		pp.tail = *t
		pp.next = t.end()
	}
	return pp, nil
}

// putTail writes the group as one frame of the tail (see tail.go), its
// records encoded into memory of their own: the tail keeps them.
func (d *DB) putTail(tx *bolt.Tx, group []*appendReq, groupEnc int64) ([]tailRecord, []Meta, error) {
	buf := make([]byte, 0, groupEnc)
	var recs []tailRecord
	var metas []Meta
	for _, req := range group {
		for i := range req.b.Records {
			r := &req.b.Records[i]
			at := len(buf)
			buf = encodeRecord(buf, r)
			recs = append(recs, tailRecord{
				key: tailKey{r.Topic, req.parts[i]},
				off: req.pos[i].Offset,
				enc: buf[at:len(buf):len(buf)],
				kv:  int64(len(r.Key) + len(r.Value)),
			})
		}
		for _, m := range req.b.Meta {
			metas = append(metas, Meta{Key: m.Key, Value: bytes.Clone(m.Value)})
		}
	}
	b, err := tx.CreateBucketIfNotExists(bucketTail)
	if err != nil {
		return nil, nil, fmt.Errorf("append to the tail: %w", err)
	}
	b.FillPercent = 1.0 // append-only keys: pack pages full
	if err := b.Put(seqKey(d.tail.next), encodeTailFrame(d.batchEnc, recs, metas)); err != nil {
		return nil, nil, fmt.Errorf("append to the tail: %w", err)
	}
	fault.Hit(hookInTail)
	fault.Hit(hookInCommit)
	return recs, metas, nil
}

// putSealed writes the tail's records and the group's into their
// partitions, seals them into batches (every partition with tail records,
// and the group's: see seal), writes the tail's metadata and the group's
// into the meta bucket and deletes the tail. It returns the growth of the
// partitions' stored bytes.
func (d *DB) putSealed(tx *bolt.Tx, group []*appendReq, parts map[tailKey]*pendingPart, order []tailKey) (stored int64, err error) {
	var tailOnly []tailKey
	for k := range d.tail.parts {
		if parts[k] == nil {
			tailOnly = append(tailOnly, k)
		}
	}
	sort.Slice(tailOnly, func(i, j int) bool {
		a, b := tailOnly[i], tailOnly[j]
		return a.topic < b.topic || a.topic == b.topic && a.p < b.p
	})
	for _, k := range tailOnly {
		pp, err := d.pendingPart(tx, k)
		if err != nil {
			return 0, err
		}
		parts[k] = pp
		order = append(order, k)
	}
	buckets := map[tailKey]*bolt.Bucket{}
	initial := map[tailKey]int64{}
	for _, k := range order {
		pp := parts[k]
		initial[k] = pp.st.stored
		yb, err := pp.tb.CreateBucketIfNotExists(partKey('r', k.p))
		if err != nil {
			return 0, fmt.Errorf("append to %s/%d: %w", k.topic, k.p, err)
		}
		yb.FillPercent = 1.0 // append-only keys: pack pages full
		buckets[k] = yb
		for i, enc := range pp.tail.encs {
			if err := yb.Put(offsetKey(pp.st.end), enc); err != nil {
				return 0, fmt.Errorf("append to %s/%d: %w", k.topic, k.p, err)
			}
			pp.st.end++
			pp.st.bytes += pp.tail.kvs[i]
			pp.st.open += int64(len(enc))
			pp.st.stored += int64(len(enc))
		}
	}
	mb := tx.Bucket(bucketMeta)
	for key, v := range d.tail.meta { // older than the group's
		if err := mb.Put([]byte(key), v); err != nil {
			return 0, fmt.Errorf("append meta %q: %w", key, err)
		}
	}
	var slab []byte
	used := 0
	for _, req := range group {
		for i := range req.b.Records {
			r := &req.b.Records[i]
			k := tailKey{r.Topic, req.parts[i]}
			pp := parts[k]
			if need := encodedSize(r); cap(slab)-len(slab) < need {
				slab = d.nextSlab(&used, need)
			}
			at := len(slab)
			slab = encodeRecord(slab, r)
			enc := slab[at:len(slab):len(slab)]
			if err := buckets[k].Put(offsetKey(pp.st.end), enc); err != nil {
				return 0, fmt.Errorf("append to %s/%d: %w", k.topic, k.p, err)
			}
			pp.st.end++
			pp.st.bytes += int64(len(r.Key) + len(r.Value))
			pp.st.open += int64(len(enc))
			pp.st.stored += int64(len(enc))
		}
		for _, m := range req.b.Meta {
			if err := mb.Put([]byte(m.Key), m.Value); err != nil {
				return 0, fmt.Errorf("append meta %q: %w", m.Key, err)
			}
		}
	}
	for _, k := range order {
		pp := parts[k]
		if err := d.seal(pp.tb, buckets[k], k.p, &pp.st, d.tail.parts[k] != nil); err != nil {
			return 0, fmt.Errorf("append to %s/%d: %w", k.topic, k.p, err)
		}
		stored += pp.st.stored - initial[k]
		if err := pp.tb.Put(partKey('s', k.p), pp.st.encode()); err != nil {
			return 0, err
		}
	}
	if tx.Bucket(bucketTail) != nil {
		if err := tx.DeleteBucket(bucketTail); err != nil {
			return 0, fmt.Errorf("seal the tail: %w", err)
		}
	}
	fault.Hit(hookInCommit)
	return stored, nil
}

// seal compresses partition p's open records (st.openFrom on, in bucket
// rb) into sealed batches of about d.opts.CompressBatchBytes each (see batch.go) once
// they hold that much (with force, whatever they hold: the records that
// were in the tail), and deletes them from rb, in the commit's
// transaction (a crash leaves them open or sealed, never both). It updates
// st. A commit of a few records thus writes them as they are (the last
// leaf of rb, as a commit of the first format did), and a batch is
// compressed and written once, whole. Records of the first format (below
// openFrom) are left as they are, read as they are, until retention trims
// them.
func (d *DB) seal(tb, rb *bolt.Bucket, p int, st *partState, force bool) error {
	if !d.opts.Compress || st.open == 0 || !force && st.open < int64(d.opts.CompressBatchBytes) {
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
