package broker

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"lakehouse/internal/fault"
)

// Fault hooks of the group commit.
var (
	hookInCommit = fault.Register("broker.in-commit",
		"records of a group written into the bbolt transaction, before it commits")
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
		err := d.commitGroup(group)
		for _, r := range group {
			r.done <- err
		}
		if err == nil {
			d.appended.Add(int64(size))
			d.notify()
			d.noteMapped(int64(size))
		}
	}
}

func (d *DB) commitGroup(group []*appendReq) error {
	if err := d.checkAppend(); err != nil {
		return err
	}
	// bbolt keeps references to Put's value until the transaction commits,
	// so each encoded record gets its own bytes, carved from large slabs
	// that are reused by the next group once this one committed.
	var slab []byte
	used := 0
	defer d.keepSlabs()
	err := d.update(func(tx *bolt.Tx) error {
		type tp struct {
			topic string
			p     int
		}
		states := map[tp]*partState{} // written back once at the end
		buckets := map[tp]*bolt.Bucket{}
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
				}
				rb := buckets[key]
				if rb == nil {
					rb = tb.Bucket(partKey('r', p))
					rb.FillPercent = 1.0 // append-only keys: pack pages full
					buckets[key] = rb
				}
				if need := encodedSize(r); cap(slab)-len(slab) < need {
					slab = d.nextSlab(&used, need)
				}
				start := len(slab)
				slab = encodeRecord(slab, r)
				if err := rb.Put(offsetKey(st.end), slab[start:len(slab):len(slab)]); err != nil {
					return fmt.Errorf("append to %s/%d: %w", r.Topic, p, err)
				}
				req.pos[i] = Position{Partition: p, Offset: st.end}
				st.end++
				st.bytes += int64(len(r.Key) + len(r.Value))
			}
			mb := tx.Bucket(bucketMeta)
			for _, m := range req.b.Meta {
				if err := mb.Put([]byte(m.Key), m.Value); err != nil {
					return fmt.Errorf("append meta %q: %w", m.Key, err)
				}
			}
		}
		for key, st := range states {
			if err := topicBuckets[key.topic].Put(partKey('s', key.p), st.encode()); err != nil {
				return err
			}
		}
		fault.Hit(hookInCommit)
		return nil
	})
	if err != nil {
		return fmt.Errorf("group commit: %w", err)
	}
	fault.Hit(hookAfterCommit)
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
