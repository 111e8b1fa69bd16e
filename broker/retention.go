package broker

import (
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

// Retain applies r to every partition of topic and returns how many records
// it removed. Start offsets advance; offsets are never reused.
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
	var total int64
	for p := 0; p < n; p++ {
		for {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			removed := 0
			var walked int64 // record bytes the walk read through the map
			err := d.update(func(tx *bolt.Tx) error {
				tb := tx.Bucket(topicBucketName(topic))
				st, err := decodeState(tb.Get(partKey('s', p)))
				if err != nil {
					return err
				}
				limit := st.end
				if r.Floor != nil && r.Floor[p] < limit {
					limit = r.Floor[p]
				}
				rb := tb.Bucket(partKey('r', p))
				var doomed [][]byte // deleted after the walk: deleting under a cursor skips keys
				c := rb.Cursor()
				for k, v := c.Seek(offsetKey(st.start)); k != nil && removed < retainChunk; k, v = c.Next() {
					off := int64(binary.BigEndian.Uint64(k))
					if off >= limit {
						break
					}
					walked += int64(len(k) + len(v))
					var m Message
					if err := decodeRecord(v, &m); err != nil {
						return fmt.Errorf("%s/%d@%d: %w", topic, p, off, err)
					}
					tooOld := r.MaxAge > 0 && !m.Timestamp.IsZero() && now.Sub(m.Timestamp) > r.MaxAge
					tooBig := r.MaxBytes > 0 && st.bytes > r.MaxBytes
					if !tooOld && !tooBig {
						break
					}
					doomed = append(doomed, append([]byte{}, k...))
					st.start = off + 1
					st.bytes -= int64(len(m.Key) + len(m.Value))
					removed++
				}
				if removed == 0 {
					return nil
				}
				for _, k := range doomed {
					if err := rb.Delete(k); err != nil {
						return err
					}
				}
				return tb.Put(partKey('s', p), st.encode())
			})
			d.noteMapped(walked) // a trim reads what it deletes, like a consumer
			if err != nil {
				return total, fmt.Errorf("retain %s/%d: %w", topic, p, err)
			}
			total += int64(removed)
			if removed < retainChunk {
				break
			}
		}
	}
	return total, nil
}
