package broker

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"lakehouse/internal/boltfile"
)

// CheckFile reads every page of the broker file at path (it must not be
// open for writing, in this process or another: it waits for the file
// lock at most DefaultOpenTimeout), the full check no open does: see
// boltfile.Check. A damaged file is an error naming it, wrapping
// ErrNotBroker and boltfile.ErrDamaged, with the way out.
func CheckFile(path string) (boltfile.Summary, error) {
	s, err := boltfile.Check(path, DefaultOpenTimeout)
	switch {
	case errors.Is(err, boltfile.ErrDamaged):
		return s, fmt.Errorf("check broker %s: %w: %w: %s", path, ErrNotBroker, err, wayOut)
	case errors.Is(err, bolterrors.ErrTimeout):
		return s, fmt.Errorf("check broker %s: %w", path, err)
	case err != nil:
		return s, fmt.Errorf("check broker %s: %w", path, err)
	}
	return s, nil
}

func (d *DB) init(existed bool) error {
	// A corrupt page can make bbolt panic or fault while reading; it is
	// reported as an error naming the file instead of crashing the process.
	err := boltfile.Guard(func() error {
		if d.opts.ReadOnly {
			return d.db.View(d.readFormat)
		}
		// A healthy broker file is not written by opening it (a commit
		// would bump its txid): only a new one gets its buckets.
		if existed {
			if err := d.db.View(d.readFormat); err == nil {
				return nil
			}
			d.topics = map[string]int{}
		}
		return d.db.Update(func(tx *bolt.Tx) error { return d.initTx(tx, existed) })
	})
	if errors.Is(err, boltfile.ErrDamaged) {
		return damaged(d.path, err)
	}
	return err
}

// readFormat checks the format marker and loads the topics (read-only).
func (d *DB) readFormat(tx *bolt.Tx) error {
	info := tx.Bucket(bucketInfo)
	if info == nil {
		return fmt.Errorf("open broker %s: %w: bbolt file without broker format marker", d.path, ErrNotBroker)
	}
	if err := d.checkFormat(info); err != nil {
		return err
	}
	if tx.Bucket(bucketMeta) == nil {
		return fmt.Errorf("open broker %s: %w: no meta bucket", d.path, ErrNotBroker)
	}
	if err := d.loadTopics(tx); err != nil {
		return err
	}
	return d.loadTail(tx)
}

func (d *DB) initTx(tx *bolt.Tx, existed bool) error {
	info := tx.Bucket(bucketInfo)
	if info == nil {
		hasOther := false
		_ = tx.ForEach(func([]byte, *bolt.Bucket) error { hasOther = true; return nil })
		if hasOther || existed && tx.Size() > 4*int64(d.db.Info().PageSize) {
			return fmt.Errorf("open broker %s: %w: bbolt file without broker format marker", d.path, ErrNotBroker)
		}
		var err error
		if info, err = tx.CreateBucket(bucketInfo); err != nil {
			return err
		}
		if err := info.Put(keyFormat, []byte(formatValue)); err != nil {
			return err
		}
	}
	if err := d.checkFormat(info); err != nil {
		return err
	}
	for _, b := range [][]byte{bucketTopics, bucketMeta} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	if err := d.loadTopics(tx); err != nil {
		return err
	}
	return d.loadTail(tx)
}

// checkFormat accepts a file of format 1, 2 or 3 and notes which.
func (d *DB) checkFormat(info *bolt.Bucket) error {
	switch got := string(info.Get(keyFormat)); got {
	case formatValue:
		d.formatOld.Store(false)
	case formatV1, formatV2:
		d.formatOld.Store(true)
	default:
		return fmt.Errorf("open broker %s: %w: format %q, want %q, %q or %q", d.path, ErrNotBroker, got, formatValue, formatV2, formatV1)
	}
	return nil
}

// markFormat marks a file of format 1 or 2 format 3 in tx, a transaction
// that writes what they cannot read (batches, a state with stored bytes, a
// tail). The mark is noted as done only once tx committed (see wrote).
func (d *DB) markFormat(tx *bolt.Tx) error {
	if !d.formatOld.Load() {
		return nil
	}
	if err := tx.Bucket(bucketInfo).Put(keyFormat, []byte(formatValue)); err != nil {
		return fmt.Errorf("mark %s format 3: %w", d.path, err)
	}
	return nil
}

// wrote notes that a transaction that called markFormat committed.
func (d *DB) wrote() { d.formatOld.Store(false) }

func (d *DB) loadTopics(tx *bolt.Tx) error {
	tb := tx.Bucket(bucketTopics)
	if tb == nil {
		return fmt.Errorf("open broker %s: %w: no topics bucket", d.path, ErrNotBroker)
	}
	return tb.ForEach(func(k, v []byte) error {
		if len(v) != 4 {
			return fmt.Errorf("open broker %s: %w: bad topic entry %q", d.path, ErrNotBroker, k)
		}
		d.topics[string(k)] = int(binary.BigEndian.Uint32(v))
		return nil
	})
}
