package broker

import (
	"encoding/binary"
	"errors"
	"time"
)

// errCorruptRecord: a stored record could not be decoded.
var errCorruptRecord = errors.New("broker: corrupt record")

// Stored record layout (all integers varint-encoded):
//
//	timestamp (unix nanoseconds, signed) | key length | key |
//	header count | (name length | name | value length | value)* | value (rest)
func encodeRecord(dst []byte, r *Record) []byte {
	var ts int64
	if !r.Timestamp.IsZero() {
		ts = r.Timestamp.UnixNano()
	}
	dst = binary.AppendVarint(dst, ts)
	dst = binary.AppendUvarint(dst, uint64(len(r.Key)))
	dst = append(dst, r.Key...)
	dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendUvarint(dst, uint64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = binary.AppendUvarint(dst, uint64(len(h.Value)))
		dst = append(dst, h.Value...)
	}
	return append(dst, r.Value...)
}

func encodedSize(r *Record) int {
	n := 3*binary.MaxVarintLen64 + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += 2*binary.MaxVarintLen64 + len(h.Key) + len(h.Value)
	}
	return n
}

// decodeRecord copies everything out of b (b belongs to a bbolt transaction).
func decodeRecord(b []byte, m *Message) error {
	buf := make([]byte, len(b))
	copy(buf, b)
	return decodeOwned(buf, m)
}

// decodeOwned decodes a record whose bytes the caller owns: m refers to
// them.
func decodeOwned(b []byte, m *Message) error {
	ts, n := binary.Varint(b)
	if n <= 0 {
		return errCorruptRecord
	}
	b = b[n:]
	if ts != 0 {
		m.Timestamp = time.Unix(0, ts).UTC()
	}
	key, b, ok := readBytes(b)
	if !ok {
		return errCorruptRecord
	}
	if len(key) > 0 {
		m.Key = key
	}
	nh, n := binary.Uvarint(b)
	if n <= 0 {
		return errCorruptRecord
	}
	b = b[n:]
	// Each header takes at least two bytes (two length varints): a count
	// read from disk sizes nothing until the bytes can hold it.
	if nh > uint64(len(b))/2 {
		return errCorruptRecord
	}
	if nh > 0 {
		m.Headers = make([]Header, 0, nh)
	}
	for i := uint64(0); i < nh; i++ {
		var k, v []byte
		if k, b, ok = readBytes(b); !ok {
			return errCorruptRecord
		}
		if v, b, ok = readBytes(b); !ok {
			return errCorruptRecord
		}
		m.Headers = append(m.Headers, Header{Key: string(k), Value: v})
	}
	m.Value = b
	return nil
}

// recordSize returns len(Key)+len(Value) of a stored record, reading only
// its length prefixes (b belongs to a bbolt transaction and is not kept).
func recordSize(b []byte) (int64, error) {
	_, n := binary.Varint(b)
	if n <= 0 {
		return 0, errCorruptRecord
	}
	b = b[n:]
	kl, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < kl {
		return 0, errCorruptRecord
	}
	b = b[n+int(kl):]
	nh, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, errCorruptRecord
	}
	b = b[n:]
	for i := uint64(0); i < 2*nh; i++ { // name and value of each header
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return 0, errCorruptRecord
		}
		b = b[n+int(l):]
	}
	// What is left is the value.
	return int64(kl) + int64(len(b)), nil
}

func readBytes(b []byte) (field, rest []byte, ok bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < l {
		return nil, nil, false
	}
	return b[n : n+int(l) : n+int(l)], b[n+int(l):], true
}

func offsetKey(off int64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(off))
	return k[:]
}

// partState is a partition's bookkeeping, stored beside its records:
// offsets start..end-1 are readable, holding bytes of key+value and taking
// stored bytes of values in the file (compressed batches, partly trimmed
// ones whole, and records of the first format).
// The records from openFrom on are open (one value each in bucket 'r', not
// yet sealed in a batch) and take open bytes; those of bucket 'r' below
// the first batch were written by the first format.
type partState struct {
	start, end, bytes, stored, open, openFrom int64
}

func (s partState) encode() []byte {
	b := make([]byte, 48)
	binary.BigEndian.PutUint64(b[0:], uint64(s.start))
	binary.BigEndian.PutUint64(b[8:], uint64(s.end))
	binary.BigEndian.PutUint64(b[16:], uint64(s.bytes))
	binary.BigEndian.PutUint64(b[24:], uint64(s.stored))
	binary.BigEndian.PutUint64(b[32:], uint64(s.open))
	binary.BigEndian.PutUint64(b[40:], uint64(s.openFrom))
	return b
}

// decodeState reads a state of either format. The first format's (24
// bytes) did not count stored bytes: its records were stored as they came,
// so their key+value bytes stand for them.
func decodeState(b []byte) (partState, error) {
	if len(b) != 24 && len(b) != 48 {
		return partState{}, errCorruptRecord
	}
	s := partState{
		start: int64(binary.BigEndian.Uint64(b[0:])),
		end:   int64(binary.BigEndian.Uint64(b[8:])),
		bytes: int64(binary.BigEndian.Uint64(b[16:])),
	}
	s.stored, s.openFrom = s.bytes, s.end
	if len(b) == 48 {
		s.stored = int64(binary.BigEndian.Uint64(b[24:]))
		s.open = int64(binary.BigEndian.Uint64(b[32:]))
		s.openFrom = int64(binary.BigEndian.Uint64(b[40:]))
	}
	return s, nil
}
