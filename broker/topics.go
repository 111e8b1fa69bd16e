package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"
)

func topicBucketName(topic string) []byte { return append([]byte("t:"), topic...) }

func partKey(prefix byte, p int) []byte {
	k := []byte{prefix, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(k[1:], uint32(p))
	return k
}

// CreateTopic implements Log.
func (d *DB) CreateTopic(ctx context.Context, topic string, partitions int) error {
	if topic == "" || partitions <= 0 {
		return fmt.Errorf("create topic %q: need a name and at least one partition", topic)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if n, ok := d.topics[topic]; ok {
		if n != partitions {
			return fmt.Errorf("create topic %q with %d partitions (has %d): %w", topic, partitions, n, ErrPartitionCount)
		}
		return nil
	}
	err := d.update(func(tx *bolt.Tx) error {
		if err := d.markFormat(tx); err != nil {
			return err
		}
		tb, err := tx.CreateBucket(topicBucketName(topic))
		if err != nil {
			return err
		}
		for p := 0; p < partitions; p++ {
			if _, err := tb.CreateBucket(partKey('r', p)); err != nil {
				return err
			}
			if err := tb.Put(partKey('s', p), partState{}.encode()); err != nil {
				return err
			}
		}
		v := make([]byte, 4)
		binary.BigEndian.PutUint32(v, uint32(partitions))
		return tx.Bucket(bucketTopics).Put([]byte(topic), v)
	})
	if err != nil {
		return fmt.Errorf("create topic %q: %w", topic, err)
	}
	d.wrote()
	d.topics[topic] = partitions
	return nil
}

func (d *DB) partitions(topic string) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return 0, ErrClosed
	}
	n, ok := d.topics[topic]
	if !ok {
		return 0, fmt.Errorf("topic %q: %w", topic, ErrUnknownTopic)
	}
	return n, nil
}

// Topics implements Log.
func (d *DB) Topics(ctx context.Context) ([]TopicInfo, error) {
	d.mu.RLock()
	names := make([]string, 0, len(d.topics))
	for n := range d.topics {
		names = append(names, n)
	}
	d.mu.RUnlock()
	sort.Strings(names)
	out := make([]TopicInfo, 0, len(names))
	for _, n := range names {
		offs, err := d.Offsets(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, TopicInfo{Name: n, Partitions: offs})
	}
	return out, nil
}

// Offsets implements Log.
func (d *DB) Offsets(ctx context.Context, topic string) ([]PartitionOffsets, error) {
	n, err := d.partitions(topic)
	if err != nil {
		return nil, err
	}
	out := make([]PartitionOffsets, n)
	// The tail first, then the states: see tail.go.
	tails := make([]tailPart, n)
	for p := range tails {
		tails[p], _ = d.tailOf(topic, p)
	}
	err = d.view(func(tx *bolt.Tx) error {
		tb := tx.Bucket(topicBucketName(topic))
		for p := 0; p < n; p++ {
			st, err := decodeState(tb.Get(partKey('s', p)))
			if err != nil {
				return fmt.Errorf("partition %d state: %w", p, err)
			}
			out[p] = PartitionOffsets{Partition: p, Start: st.start, End: st.end, Bytes: st.bytes, Stored: st.stored}
			if t := tails[p]; t.end() > st.end {
				kv, enc := t.beyond(st.end)
				out[p].End = t.end()
				out[p].Bytes += kv
				out[p].Stored += enc
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("offsets of %q: %w", topic, err)
	}
	return out, nil
}

// Meta implements Log.
func (d *DB) Meta(ctx context.Context, key string) ([]byte, error) {
	if v, ok := d.tailMeta(key); ok { // newer than the meta bucket's, or equal
		return append([]byte{}, v...), nil
	}
	var v []byte
	err := d.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta).Get([]byte(key)); b != nil {
			v = append([]byte{}, b...)
		}
		return nil
	})
	return v, err
}
