package broker

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/zstd"
	bolt "go.etcd.io/bbolt"
)

// The open tail (format 3). With Options.Compress, a group commit whose
// records fill no batch does not write them into their partitions: it puts
// one value, a tail frame holding every record and producer metadata of the
// group compressed together, under the next key of the top-level bucket
// "tail", and changes nothing else. So a commit at the real stream's rate
// rewrites the tail's last leaf, the root and the meta page, instead of the
// last leaf and branch of every partition it appends to, their states and
// the meta bucket (about a third of the pages, and the records compressed).
//
// The commit that would fill a batch in some partition (or the tail's
// bound) seals instead: the tail's records and the group's go into their
// partitions' batches (seal), every partition with tail records gets its
// state, the tail's metadata and the group's go into the meta bucket, and
// the tail bucket is deleted, all in the one transaction. So at any commit
// the file holds each record either in its partition or in the tail, never
// both, and a crash rolls the commit back whole as before.
//
// A tail record's offset is its partition's end in the partition's state
// (the state does not count tail records) plus its place in the tail. The
// DB keeps the tail decoded in memory (loaded by Open, extended and cleared
// by the committer after each commit); readers take their partition's tail
// before their read transaction, so a seal between the two shows the
// sealed records twice, never zero times, and eachRecord reads each once.

// tailFrameMagic starts a tail frame: magic (1) | CRC-32C of the rest (4) |
// zstd frame of: uvarint count, count x (uvarint len(topic), topic,
// uvarint partition, uvarint offset, uvarint len(encoding), encoding
// (encodeRecord)), uvarint metas, metas x (uvarint len(key), key, uvarint
// len(value), value).
const tailFrameMagic = 0xB3

var bucketTail = []byte("tail")

// Bounds of the open tail: past either, the next commit seals.
const (
	maxTailBytes  = 1 << 20 // encoded bytes of the tail's records (held in memory too)
	maxTailFrames = 512     // frames (commits) in the tail
)

// tailKey names a partition.
type tailKey struct {
	topic string
	p     int
}

// tailPart is one partition's records in the tail: offsets from..from+n-1.
// The committer only appends to its slices, so a copy of it taken under
// tailMu stays valid after it (see tailOf).
type tailPart struct {
	from int64    // the partition's end in its state
	encs [][]byte // encodings (encodeRecord), never modified once added
	kvs  []int64  // len(Key)+len(Value) of each
	enc  int64    // sum of len(encs)
}

func (t tailPart) end() int64 { return t.from + int64(len(t.encs)) }

// beyond returns the key+value and encoded bytes of the records from
// offset off on.
func (t tailPart) beyond(off int64) (kv, enc int64) {
	for i := max(0, off-t.from); i < int64(len(t.encs)); i++ {
		kv += t.kvs[i]
		enc += int64(len(t.encs[i]))
	}
	return kv, enc
}

// openTail is the tail as the committed file holds it. Guarded by
// DB.tailMu; only the committer (and Open) changes it.
type openTail struct {
	parts  map[tailKey]*tailPart
	meta   map[string][]byte
	frames int
	bytes  int64  // sum of the parts' enc
	next   uint64 // key of the next frame
}

func newOpenTail(next uint64) openTail {
	return openTail{parts: map[tailKey]*tailPart{}, meta: map[string][]byte{}, next: next}
}

// tailOf returns a copy of partition p of topic's tail (zero when empty).
func (d *DB) tailOf(topic string, p int) (tailPart, bool) {
	d.tailMu.RLock()
	defer d.tailMu.RUnlock()
	t := d.tail.parts[tailKey{topic, p}]
	if t == nil {
		return tailPart{}, false
	}
	return *t, true
}

// tailMeta returns the tail's value of a metadata key, if it holds one.
func (d *DB) tailMeta(key string) ([]byte, bool) {
	d.tailMu.RLock()
	defer d.tailMu.RUnlock()
	v, ok := d.tail.meta[key]
	return v, ok
}

// tailRecord is one record of a group going into a tail frame.
type tailRecord struct {
	key tailKey
	off int64
	enc []byte
	kv  int64
}

func seqKey(n uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], n)
	return k[:]
}

// encodeTailFrame encodes a frame of recs and metas (see tailFrameMagic).
func encodeTailFrame(enc *zstd.Encoder, recs []tailRecord, metas []Meta) []byte {
	size := 16
	for _, r := range recs {
		size += len(r.key.topic) + len(r.enc) + 4*binary.MaxVarintLen64
	}
	for _, m := range metas {
		size += len(m.Key) + len(m.Value) + 2*binary.MaxVarintLen64
	}
	raw := make([]byte, 0, size)
	raw = binary.AppendUvarint(raw, uint64(len(recs)))
	for _, r := range recs {
		raw = binary.AppendUvarint(raw, uint64(len(r.key.topic)))
		raw = append(raw, r.key.topic...)
		raw = binary.AppendUvarint(raw, uint64(r.key.p))
		raw = binary.AppendUvarint(raw, uint64(r.off))
		raw = binary.AppendUvarint(raw, uint64(len(r.enc)))
		raw = append(raw, r.enc...)
	}
	raw = binary.AppendUvarint(raw, uint64(len(metas)))
	for _, m := range metas {
		raw = binary.AppendUvarint(raw, uint64(len(m.Key)))
		raw = append(raw, m.Key...)
		raw = binary.AppendUvarint(raw, uint64(len(m.Value)))
		raw = append(raw, m.Value...)
	}
	out := make([]byte, 5, 5+len(raw)/2)
	out[0] = tailFrameMagic
	out = enc.EncodeAll(raw, out)
	binary.BigEndian.PutUint32(out[1:5], crc32.Checksum(out[5:], castagnoli))
	return out
}

// decodeTailFrame decodes a frame; the records' encodings and the metas'
// values are new memory, not the frame's.
func decodeTailFrame(v []byte) ([]tailRecord, []Meta, error) {
	if len(v) < 5 || v[0] != tailFrameMagic {
		return nil, nil, fmt.Errorf("tail frame: bad magic: %w", ErrCorruptBatch)
	}
	if crc32.Checksum(v[5:], castagnoli) != binary.BigEndian.Uint32(v[1:5]) {
		return nil, nil, fmt.Errorf("tail frame: checksum: %w", ErrCorruptBatch)
	}
	raw, err := zstdDecoder().DecodeAll(v[5:], nil)
	if err != nil {
		return nil, nil, fmt.Errorf("tail frame: %w: %w", ErrCorruptBatch, err)
	}
	bad := fmt.Errorf("tail frame: truncated: %w", ErrCorruptBatch)
	uv := func() (uint64, bool) {
		n, w := binary.Uvarint(raw)
		if w <= 0 {
			return 0, false
		}
		raw = raw[w:]
		return n, true
	}
	bytesOf := func() ([]byte, bool) {
		n, ok := uv()
		if !ok || n > uint64(len(raw)) {
			return nil, false
		}
		b := raw[:n:n]
		raw = raw[n:]
		return b, true
	}
	count, ok := uv()
	if !ok || count > uint64(len(raw)) {
		return nil, nil, bad
	}
	recs := make([]tailRecord, 0, count)
	for range count {
		topic, ok1 := bytesOf()
		p, ok2 := uv()
		off, ok3 := uv()
		enc, ok4 := bytesOf()
		if !ok1 || !ok2 || !ok3 || !ok4 || p > 1<<31 || off > 1<<62 {
			return nil, nil, bad
		}
		kv, err := recordSize(enc)
		if err != nil {
			return nil, nil, fmt.Errorf("tail frame: %w", err)
		}
		recs = append(recs, tailRecord{key: tailKey{string(topic), int(p)}, off: int64(off), enc: enc, kv: kv})
	}
	nm, ok := uv()
	if !ok || nm > uint64(len(raw)) {
		return nil, nil, bad
	}
	metas := make([]Meta, 0, nm)
	for range nm {
		k, ok1 := bytesOf()
		val, ok2 := bytesOf()
		if !ok1 || !ok2 {
			return nil, nil, bad
		}
		metas = append(metas, Meta{Key: string(k), Value: val})
	}
	if len(raw) != 0 {
		return nil, nil, bad
	}
	return recs, metas, nil
}

// loadTail reads the tail bucket into d.tail (Open, in its transaction):
// each partition's tail must start at its state's end and be dense.
func (d *DB) loadTail(tx *bolt.Tx) error {
	t := newOpenTail(0)
	b := tx.Bucket(bucketTail)
	if b == nil {
		d.tail = t
		return nil
	}
	err := b.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("tail key %x: %w", k, ErrCorruptBatch)
		}
		recs, metas, err := decodeTailFrame(v)
		if err != nil {
			return fmt.Errorf("tail frame %d: %w", binary.BigEndian.Uint64(k), err)
		}
		// Each partition's records continue its tail, or start at its
		// state's end: checked before add takes them.
		next := map[tailKey]int64{}
		for _, r := range recs {
			want, ok := next[r.key]
			if !ok {
				if part := t.parts[r.key]; part != nil {
					want = part.end()
				} else {
					tb := tx.Bucket(topicBucketName(r.key.topic))
					if tb == nil {
						return fmt.Errorf("tail frame %d: record of unknown topic %q: %w", binary.BigEndian.Uint64(k), r.key.topic, ErrCorruptBatch)
					}
					st, err := decodeState(tb.Get(partKey('s', r.key.p)))
					if err != nil {
						return fmt.Errorf("tail frame %d: %s/%d state: %w", binary.BigEndian.Uint64(k), r.key.topic, r.key.p, err)
					}
					want = st.end
				}
			}
			if r.off != want {
				return fmt.Errorf("tail frame %d: record %s/%d@%d, want offset %d: %w",
					binary.BigEndian.Uint64(k), r.key.topic, r.key.p, r.off, want, ErrCorruptBatch)
			}
			next[r.key] = want + 1
		}
		t.add(recs, metas)
		t.next = binary.BigEndian.Uint64(k) + 1
		return nil
	})
	if err != nil {
		return fmt.Errorf("open broker %s: %w: %w", d.path, ErrNotBroker, err)
	}
	d.tail = t
	return nil
}

// add appends a committed frame's records and metadata (the committer,
// under tailMu, and loadTail once it checked the frame).
func (t *openTail) add(recs []tailRecord, metas []Meta) {
	for _, r := range recs {
		part := t.parts[r.key]
		if part == nil {
			part = &tailPart{from: r.off}
			t.parts[r.key] = part
		}
		part.encs = append(part.encs, r.enc)
		part.kvs = append(part.kvs, r.kv)
		part.enc += int64(len(r.enc))
		t.bytes += int64(len(r.enc))
	}
	for _, m := range metas {
		t.meta[m.Key] = m.Value
	}
	t.frames++
	t.next++
}
