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
	b = buf
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

// partState is a partition's bookkeeping, stored beside its records.
type partState struct {
	start, end, bytes int64
}

func (s partState) encode() []byte {
	b := make([]byte, 24)
	binary.BigEndian.PutUint64(b[0:], uint64(s.start))
	binary.BigEndian.PutUint64(b[8:], uint64(s.end))
	binary.BigEndian.PutUint64(b[16:], uint64(s.bytes))
	return b
}

func decodeState(b []byte) (partState, error) {
	if len(b) != 24 {
		return partState{}, errCorruptRecord
	}
	return partState{
		start: int64(binary.BigEndian.Uint64(b[0:])),
		end:   int64(binary.BigEndian.Uint64(b[8:])),
		bytes: int64(binary.BigEndian.Uint64(b[16:])),
	}, nil
}
