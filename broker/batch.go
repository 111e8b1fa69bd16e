package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// ErrCorruptBatch: a stored batch of records failed its checksum, could not
// be decompressed, or does not hold the records its key and header say. The
// records are never returned; the error names the file, the partition and
// the batch's offsets.
var ErrCorruptBatch = errors.New("broker: corrupt record batch")

// A partition's records are stored in batches (bucket 'z'), as Kafka and
// Redpanda store a producer batch: the records of one or more group
// commits, encoded one after the other (encodeRecord) and compressed
// together with zstd. A batch's key is its first offset; it holds the
// offsets key..key+count-1. The value:
//
//	magic (1 byte: batchZstd) | CRC-32C of the header (4) | CRC-32C of the
//	payload (4) | header length (uvarint) | header | payload
//	header: count | raw length | count x (timestamp delta (varint, unix
//	nanoseconds, from the previous record; 0 is none) | len(key)+len(value)
//	| encoded length), all varints
//	payload: zstd frame of the records' encodings, raw length bytes
//
// The header lets retention (timestamps) and Sizes (key+value lengths)
// decide without decompressing, and both checksums refuse a damaged batch
// before anything of it is used.
const batchZstd = 0xB1

// DefaultCompressBatchBytes is the encoded size of the records a batch
// seals (Options.CompressBatchBytes). zstd on events shaped like the
// stream's (replay.Generate, 1.2 KB each) stores about 510 bytes per event
// one by one, 270 in 16 KiB batches, 190 in 64 KiB and 135 in 256 KiB (the
// 50 real recorded events, 61 KB together: 191). A reader decompresses a
// whole batch to read any record of it, and the records wait open (stored
// one by one) until they fill one, so it stays small.
const DefaultCompressBatchBytes = 64 << 10

// maxBatchHeader bounds a header read from disk (count x 3 varints).
const maxBatchHeader = 1 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchRec is what a batch's header says of one record.
type batchRec struct {
	ts  int64 // unix nanoseconds, 0: none
	kv  int64 // len(key)+len(value)
	enc int   // bytes of its encoding in the payload
}

// batchHeader is a parsed batch value; payload aliases the value.
type batchHeader struct {
	recs       []batchRec
	rawLen     int
	payloadCRC uint32
	payload    []byte
}

// zstdDecoder is shared by every reader (DecodeAll is safe for concurrent
// use); its memory bound refuses a damaged frame that claims a huge size.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(64<<20))
	if err != nil {
		panic("broker: zstd decoder options: " + err.Error()) // constant options: a programming error
	}
	return dec
})

// newBatchEncoder returns the committer's encoder: one goroutine, and a
// 1 MiB window (a batch is about DefaultCompressBatchBytes; a larger one, of a record
// near MaxRecordBytes, still compresses within it). It is zstd's fastest
// level: sealing runs on the commit path, where the default level cost
// about two thirds of the broker's CPU at 10,000 events/s, and a batch of
// events compresses nearly as well at either.
func newBatchEncoder() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20), zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderCRC(false)) // the payload has its own CRC, checked before decoding
	if err != nil {
		panic("broker: zstd encoder options: " + err.Error()) // constant options: a programming error
	}
	return enc
}

// encodeBatch compresses raw (the records' encodings, recs saying how
// long each is) into a new batch value.
func encodeBatch(enc *zstd.Encoder, recs []batchRec, raw []byte) []byte {
	var hdr []byte
	hdr = binary.AppendUvarint(hdr, uint64(len(recs)))
	hdr = binary.AppendUvarint(hdr, uint64(len(raw)))
	var prev int64
	for _, r := range recs {
		hdr = binary.AppendVarint(hdr, r.ts-prev)
		prev = r.ts
		hdr = binary.AppendUvarint(hdr, uint64(r.kv))
		hdr = binary.AppendUvarint(hdr, uint64(r.enc))
	}
	v := make([]byte, 9, 9+binary.MaxVarintLen64+len(hdr)+len(raw)/2)
	v[0] = batchZstd
	v = binary.AppendUvarint(v, uint64(len(hdr)))
	v = append(v, hdr...)
	binary.BigEndian.PutUint32(v[1:], crc32.Checksum(v[9:], castagnoli))
	payloadAt := len(v)
	v = enc.EncodeAll(raw, v)
	binary.BigEndian.PutUint32(v[5:], crc32.Checksum(v[payloadAt:], castagnoli))
	return v
}

// parseBatch checks a batch value's header (not its payload: see raw) and
// returns it. v belongs to a bbolt transaction: the result aliases it.
func parseBatch(v []byte) (batchHeader, error) {
	if len(v) < 10 || v[0] != batchZstd {
		return batchHeader{}, fmt.Errorf("%w: not a batch (%d bytes)", ErrCorruptBatch, len(v))
	}
	hl, n := binary.Uvarint(v[9:])
	if n <= 0 || hl > maxBatchHeader || uint64(len(v)-9-n) < hl {
		return batchHeader{}, fmt.Errorf("%w: bad header length", ErrCorruptBatch)
	}
	end := 9 + n + int(hl)
	if crc32.Checksum(v[9:end], castagnoli) != binary.BigEndian.Uint32(v[1:]) {
		return batchHeader{}, fmt.Errorf("%w: header checksum mismatch", ErrCorruptBatch)
	}
	h := batchHeader{payloadCRC: binary.BigEndian.Uint32(v[5:]), payload: v[end:]}
	b := v[9+n : end]
	count, n := binary.Uvarint(b)
	// Each record takes at least three header bytes: a count read from
	// disk sizes nothing the header cannot hold.
	if n <= 0 || count == 0 || count > uint64(len(b))/3 {
		return batchHeader{}, fmt.Errorf("%w: bad record count", ErrCorruptBatch)
	}
	b = b[n:]
	raw, n := binary.Uvarint(b)
	if n <= 0 || raw > 64<<20 {
		return batchHeader{}, fmt.Errorf("%w: bad raw length", ErrCorruptBatch)
	}
	b = b[n:]
	h.rawLen = int(raw)
	h.recs = make([]batchRec, count)
	var ts int64
	total := 0
	for i := range h.recs {
		d, n1 := binary.Varint(b)
		if n1 <= 0 {
			return batchHeader{}, fmt.Errorf("%w: record %d: bad timestamp", ErrCorruptBatch, i)
		}
		kv, n2 := binary.Uvarint(b[n1:])
		if n2 <= 0 {
			return batchHeader{}, fmt.Errorf("%w: record %d: bad size", ErrCorruptBatch, i)
		}
		el, n3 := binary.Uvarint(b[n1+n2:])
		if n3 <= 0 || el > raw || kv > el {
			return batchHeader{}, fmt.Errorf("%w: record %d: bad length", ErrCorruptBatch, i)
		}
		b = b[n1+n2+n3:]
		ts += d
		total += int(el)
		h.recs[i] = batchRec{ts: ts, kv: int64(kv), enc: int(el)}
	}
	if len(b) != 0 || total != h.rawLen {
		return batchHeader{}, fmt.Errorf("%w: records of %d bytes in a batch of %d", ErrCorruptBatch, total, h.rawLen)
	}
	return h, nil
}

// raw checks the payload's checksum and decompresses it into a new buffer
// the caller owns.
func (h batchHeader) raw() ([]byte, error) {
	if crc32.Checksum(h.payload, castagnoli) != h.payloadCRC {
		return nil, fmt.Errorf("%w: payload checksum mismatch", ErrCorruptBatch)
	}
	out, err := zstdDecoder().DecodeAll(h.payload, make([]byte, 0, h.rawLen))
	if err != nil {
		return nil, fmt.Errorf("%w: decompress: %w", ErrCorruptBatch, err)
	}
	if len(out) != h.rawLen {
		return nil, fmt.Errorf("%w: %d bytes decompressed, header says %d", ErrCorruptBatch, len(out), h.rawLen)
	}
	return out, nil
}

// batchKeyOffset is the first offset of the batch stored under key k.
func batchKeyOffset(k []byte) int64 { return int64(binary.BigEndian.Uint64(k)) }
