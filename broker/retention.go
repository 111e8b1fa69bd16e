package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Retention says which old records of a topic may be removed.
type Retention struct {
	// MaxAge trims records whose timestamp is older than now minus MaxAge
	// (0: no age limit).
	MaxAge time.Duration
	// MaxBytes trims the oldest records of each partition while the
	// partition holds more than MaxBytes of key+value (0: no size limit).
	MaxBytes int64
	// MaxStored trims the oldest records of each partition while the
	// partition's records take more than MaxStored bytes of the file
	// (compressed; a batch counts whole until all its records are trimmed)
	// (0: no limit).
	MaxStored int64
	// Floor, when not nil, holds for each partition the first offset that
	// must never be trimmed (for example a consumer's committed position):
	// retention stops before it whatever the age or size.
	Floor []int64
	// Now is the clock for MaxAge (zero: time.Now).
	Now time.Time
}

// retainChunk bounds the records deleted per transaction, so retention never
// holds the write lock long enough to stall appends.
const retainChunk = 10_000

// DefaultRetainFreePages is how many free pages of broker.db a retention
// pass may leave beyond those the appends since the topic's previous pass
// took (see Retain): 4096 pages of 8 KiB, 32 MiB of trimmed records, a
// freelist of 32 KiB written at every commit at most, against about 130
// KiB for a commit of a few records.
const DefaultRetainFreePages = 4096

// Retain applies r to every partition of topic and returns how many records
// it removed. Start offsets advance; offsets are never reused.
//
// A pass frees at most as much as the appends reuse: it stops once the
// file holds DefaultRetainFreePages free pages plus as many as the records
// appended since the topic's previous pass (any topic's) took, sharing
// that between the partitions; the records still due are trimmed by a
// later pass. bbolt writes the whole freelist, 8 bytes per free page, at
// every commit, and the file never shrinks: trimming a day of backlog at
// once (after a stop, or a shorter retention) would free hundreds of
// thousands of pages and make every commit write megabytes until the
// appends had reused them, while trimming it as the appends need the
// space keeps the file the same size. Retain calls are serialised.
func (d *DB) Retain(ctx context.Context, topic string, r Retention) (int64, error) {
	n, err := d.partitions(topic)
	if err != nil {
		return 0, err
	}
	if r.Floor != nil && len(r.Floor) != n {
		return 0, fmt.Errorf("retain %q: floor has %d partitions, topic has %d: %w", topic, len(r.Floor), n, ErrBadPartition)
	}
	now := r.Now
	if now.IsZero() {
		now = time.Now()
	}
	d.retainMu.Lock()
	defer d.retainMu.Unlock()
	pageSize := int64(d.db.Info().PageSize)
	appended := d.appended.Load()
	budget := d.retainFreeBudget + (appended-d.retainSeen[topic])/pageSize
	d.retainSeen[topic] = appended
	var total int64
	for p := 0; p < n; p++ {
		// This partition's share of the pages the pass may still free.
		share := (budget - d.freePages()) * pageSize / int64(n-p)
		var walked int64 // record bytes the walk read through the map
		for share-walked > 0 {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			removed, w, err := d.retainChunk(topic, p, r, now, share-walked)
			walked += w
			d.noteMapped(w) // a trim reads what it deletes, like a consumer
			if err != nil {
				return total, fmt.Errorf("retain %s/%d: %w", topic, p, err)
			}
			total += int64(removed)
			if removed < retainChunk {
				break // nothing more due, or the share is used
			}
		}
	}
	return total, nil
}

// freePages is how many pages bbolt's freelist holds (free, or freed by a
// transaction some reader may still see): what every commit writes.
func (d *DB) freePages() int64 {
	st := d.db.Stats()
	return int64(st.FreePageN + st.PendingPageN)
}

// retainChunk removes, in one transaction, at most retainChunk of
// partition p's oldest records that r makes due, stopping once it has
// walked maxBytes of records. It returns how many it removed and the
// bytes it walked (those it freed).
//
// Records of the first format go one by one; a batch goes once all its
// records are trimmed (Start may point inside a batch: the records before
// it are no longer readable, and MaxStored counts the batch until it
// goes).
func (d *DB) retainChunk(topic string, p int, r Retention, now time.Time, maxBytes int64) (removed int, walked int64, err error) {
	err = d.update(func(tx *bolt.Tx) error {
		tb := tx.Bucket(topicBucketName(topic))
		st, err := decodeState(tb.Get(partKey('s', p)))
		if err != nil {
			return err
		}
		limit := st.end
		if r.Floor != nil && r.Floor[p] < limit {
			limit = r.Floor[p]
		}
		due := func(ts int64) bool {
			tooOld := r.MaxAge > 0 && ts != 0 && now.Sub(time.Unix(0, ts)) > r.MaxAge
			tooBig := r.MaxBytes > 0 && st.bytes > r.MaxBytes
			tooMuch := r.MaxStored > 0 && st.stored > r.MaxStored
			return st.start < limit && (tooOld || tooBig || tooMuch)
		}
		more := func() bool { return removed < retainChunk && walked < maxBytes }
		stopped := false
		// plain trims records stored one by one: first format, open.
		plain := func(bucket []byte) error {
			rb := tb.Bucket(bucket)
			if rb == nil || stopped {
				return nil
			}
			var doomed [][]byte // deleted after the walk: deleting under a cursor skips keys
			c := rb.Cursor()
			for k, v := c.Seek(offsetKey(st.start)); k != nil && more(); k, v = c.Next() {
				off := int64(binary.BigEndian.Uint64(k))
				if off != st.start {
					break // the rest is elsewhere
				}
				var m Message
				if err := decodeRecord(v, &m); err != nil {
					return fmt.Errorf("%s/%d@%d in %s: %w", topic, p, off, d.path, err)
				}
				var ts int64
				if !m.Timestamp.IsZero() {
					ts = m.Timestamp.UnixNano()
				}
				if !due(ts) {
					stopped = true
					break
				}
				walked += int64(len(k) + len(v))
				doomed = append(doomed, bytes.Clone(k))
				st.start = off + 1
				st.bytes -= int64(len(m.Key) + len(m.Value))
				if off >= st.openFrom {
					st.open -= int64(len(v))
				}
				st.stored = max(0, st.stored-int64(len(v)))
				removed++
			}
			for _, k := range doomed {
				if err := rb.Delete(k); err != nil {
					return err
				}
			}
			return nil
		}
		if err := plain(partKey('r', p)); err != nil {
			return err
		}
		if zb := tb.Bucket(partKey('z', p)); zb != nil && !stopped {
			var doomed [][]byte
			c := zb.Cursor()
		batches:
			for k, v := seekBatch(c, st.start); k != nil && more(); k, v = c.Next() {
				first := batchKeyOffset(k)
				h, err := parseBatch(v)
				if err != nil {
					return fmt.Errorf("%s/%d: batch at offset %d in %s: %w: %w", topic, p, first, d.path, ErrNotBroker, err)
				}
				end := first + int64(len(h.recs))
				if st.start < first || st.start >= end {
					break // the rest is open, or nothing is left
				}
				for _, br := range h.recs[st.start-first:] {
					if removed >= retainChunk || !due(br.ts) {
						stopped = true
						break batches
					}
					st.start++
					st.bytes -= br.kv
					removed++
				}
				doomed = append(doomed, bytes.Clone(k))
				walked += int64(len(k) + len(v))
				st.stored -= int64(len(v))
			}
			for _, k := range doomed {
				if err := zb.Delete(k); err != nil {
					return err
				}
			}
		}
		if err := plain(partKey('r', p)); err != nil {
			return err
		}
		if removed == 0 {
			return nil
		}
		if err := d.markFormat(tx); err != nil {
			return err
		}
		return tb.Put(partKey('s', p), st.encode())
	})
	if err != nil {
		return 0, walked, err
	}
	if removed > 0 {
		d.wrote()
	}
	return removed, walked, nil
}
