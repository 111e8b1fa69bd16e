package broker

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// TestDecodeRecordBoundsHeaderCount: a header count read from a damaged
// record sizes nothing it cannot hold; the record is refused as corrupt
// (it was a make of up to 2^64 headers), and a good record still decodes.
func TestDecodeRecordBoundsHeaderCount(t *testing.T) {
	good := encodeRecord(nil, &Record{Timestamp: time.Unix(1, 0), Key: []byte("k"),
		Headers: []Header{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}}, Value: []byte("v")})
	var m Message
	if err := decodeRecord(good, &m); err != nil || len(m.Headers) != 2 || string(m.Value) != "v" {
		t.Fatalf("good record: %v, %+v", err, m)
	}
	for _, count := range []uint64{1 << 62, 1 << 32, 3} { // 3: one more than the bytes after it hold
		b := binary.AppendVarint(nil, 1)
		b = binary.AppendUvarint(b, 0) // no key
		b = binary.AppendUvarint(b, count)
		b = append(b, 1, 'a', 1, '1') // one header's bytes
		var m Message
		if err := decodeRecord(b, &m); !errors.Is(err, errCorruptRecord) {
			t.Errorf("header count %d over %d bytes: %v, want errCorruptRecord", count, 4, err)
		}
	}
}
