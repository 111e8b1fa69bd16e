package table

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"io"
	"math/bits"
	"sync"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
)

// Manifests and manifest lists are Avro object container files that
// iceberg-go writes through github.com/twmb/avro with the deflate codec,
// which it hard-codes (ocf.DeflateCodec(-1) in iceberg-go's manifest.go);
// the codec compresses each Avro block with Go's compress/flate Writer and
// Close, and Close ends every stream with an empty final stored block
// (BFINAL=1, LEN=0: the bytes 00 00 ff ff). zlib and Go read that; some
// inflaters do not (icebird 0.3.1's, a JavaScript Iceberg reader's, fails on
// every manifest). The appliance's file IO therefore rewrites each deflate
// stream of a .avro file it writes so that it ends the plain way: the empty
// stored block becomes an empty final fixed-Huffman block (ten bits, the
// ending zlib writes after a flush, and klauspost/compress's flate writer
// at every end), so the stream holds no empty stored block.
//
// A rewritten stream is shorter, and iceberg-go has already counted the
// bytes it wrote as the manifest's length (the manifest list records it, and
// readers that know a file's length may trust it), so the file must keep its
// size: the bytes saved are given back as JSON whitespace inside the header's
// avro.schema value, which every Avro reader parses as JSON. Files keep their
// records, sync markers and every other header entry byte for byte. Anything
// this does not recognise (another codec, a stream that does not end that
// way, a rewrite that does not inflate to the same bytes, a length that
// cannot be kept) is written as it came: reframing never makes a file less
// readable. Reading is unchanged, so manifests written before keep reading.

// reframeAvro is off only in tests that write manifests as iceberg-go does
// unaided (the files tables written before this fix hold).
var reframeAvro = true

// avroMagic opens every Avro object container file.
var avroMagic = []byte("Obj\x01")

// reframing buffers a .avro file and writes it reframed on Close.
type reframing struct {
	dst    iceio.FileWriter
	buf    bytes.Buffer
	closed bool
}

// reframeWriter wraps w, a new file named name, if it is an Avro file that
// reframing applies to.
func reframeWriter(name string, w iceio.FileWriter) iceio.FileWriter {
	if !reframeAvro || !isAvroName(name) {
		return w
	}
	return &reframing{dst: w}
}

// reframingIO is fsys with .avro files reframed, for a warehouse on S3 (on
// local disk durableFS does it, for every lake in the process).
func reframingIO(fsys iceio.IO, err error) (iceio.IO, error) {
	if b, ok := fsys.(*blobfs.FileIO); ok && err == nil {
		return reframingBlob{b}, nil
	}
	return fsys, err
}

// reframingBlob is iceberg-go's S3 file IO with Create and WriteFile
// reframing .avro files; every other method is the file IO's own.
type reframingBlob struct{ *blobfs.FileIO }

func (b reframingBlob) Create(name string) (iceio.FileWriter, error) {
	w, err := b.FileIO.Create(name)
	if err != nil {
		return nil, err
	}
	return reframeWriter(name, w), nil
}

func (b reframingBlob) WriteFile(name string, content []byte) error {
	if reframeAvro && isAvroName(name) {
		content = reframe(content)
	}
	return b.FileIO.WriteFile(name, content)
}

func isAvroName(name string) bool {
	return len(name) > len(".avro") && name[len(name)-len(".avro"):] == ".avro"
}

func (r *reframing) Write(p []byte) (int, error) { return r.buf.Write(p) }

func (r *reframing) ReadFrom(src io.Reader) (int64, error) { return r.buf.ReadFrom(src) }

// Close writes the file and closes it (durable on the local disk once this
// returns, as the wrapped writer's Close makes it).
func (r *reframing) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if _, err := r.dst.Write(reframe(r.buf.Bytes())); err != nil {
		_ = r.dst.Close()
		return err
	}
	return r.dst.Close()
}

// reframe returns data, an Avro object container file, with every deflate
// block's stream ending rewritten (see above) and its length unchanged; or
// data itself when there is nothing to rewrite or it cannot be done.
func reframe(data []byte) []byte {
	h, ok := parseAvroHeader(data)
	if !ok || h.codec != "deflate" {
		return data
	}
	var blocks []byte
	rewritten := false
	for pos := h.end; pos < len(data); {
		count, n := binary.Varint(data[pos:])
		if n <= 0 || count < 0 {
			return data
		}
		size, m := binary.Varint(data[pos+n:])
		start := pos + n + m
		if m <= 0 || size < 0 || int64(len(data)-start) < size+16 {
			return data
		}
		end := start + int(size)
		if !bytes.Equal(data[end:end+16], h.sync) {
			return data
		}
		payload, changed := plainEnding(data[start:end])
		rewritten = rewritten || changed
		blocks = binary.AppendVarint(blocks, count)
		blocks = binary.AppendVarint(blocks, int64(len(payload)))
		blocks = append(blocks, payload...)
		blocks = append(blocks, h.sync...)
		pos = end + 16
	}
	saved := len(data) - h.end - len(blocks)
	if !rewritten || saved <= 0 {
		return data
	}
	header, ok := h.padSchema(data, saved)
	if !ok {
		return data
	}
	out := append(header, blocks...)
	if len(out) != len(data) {
		return data
	}
	return out
}

// avroHeader is where an Avro file's header puts what reframe needs.
type avroHeader struct {
	codec string
	sync  []byte
	end   int // offset of the first data block
	// schemaLen and schema are the offsets of the avro.schema value's
	// length and bytes (schema..schemaEnd).
	schemaLen, schema, schemaEnd int
}

// parseAvroHeader reads the header of an Avro object container file: the
// magic, the metadata map (in any block form the spec allows) and the sync
// marker.
func parseAvroHeader(data []byte) (avroHeader, bool) {
	var h avroHeader
	if !bytes.HasPrefix(data, avroMagic) {
		return h, false
	}
	pos := len(avroMagic)
	long := func() (int64, bool) {
		v, n := binary.Varint(data[pos:])
		if n <= 0 {
			return 0, false
		}
		pos += n
		return v, true
	}
	str := func() (from, to int, ok bool) {
		l, ok := long()
		if !ok || l < 0 || int64(len(data)-pos) < l {
			return 0, 0, false
		}
		from, pos = pos, pos+int(l)
		return from, pos, true
	}
	h.schemaLen = -1
	for {
		count, ok := long()
		if !ok {
			return h, false
		}
		if count == 0 {
			break
		}
		if count < 0 {
			if _, ok := long(); !ok { // the block's byte size
				return h, false
			}
			count = -count
		}
		for range count {
			kf, kt, ok := str()
			if !ok {
				return h, false
			}
			lenAt := pos
			vf, vt, ok := str()
			if !ok {
				return h, false
			}
			switch string(data[kf:kt]) {
			case "avro.codec":
				h.codec = string(data[vf:vt])
			case "avro.schema":
				h.schemaLen, h.schema, h.schemaEnd = lenAt, vf, vt
			}
		}
	}
	if h.schemaLen < 0 || len(data)-pos < 16 {
		return h, false
	}
	h.sync = data[pos : pos+16]
	h.end = pos + 16
	return h, true
}

// padSchema returns the header of data with the avro.schema value grown by
// JSON whitespace so that the header is extra bytes longer (its length
// prefix may grow too), or false when no amount of whitespace gives exactly
// that. Whitespace goes after a leading '{' or '[', else before the value.
func (h avroHeader) padSchema(data []byte, extra int) ([]byte, bool) {
	schema := data[h.schema:h.schemaEnd]
	oldLen := h.schema - h.schemaLen
	for k := extra; k >= 0 && k >= extra-binary.MaxVarintLen64; k-- {
		lenBytes := binary.AppendVarint(nil, int64(len(schema)+k))
		if k+len(lenBytes)-oldLen != extra {
			continue
		}
		at := 0
		if len(schema) > 0 && (schema[0] == '{' || schema[0] == '[') {
			at = 1
		}
		out := make([]byte, 0, h.end+extra)
		out = append(out, data[:h.schemaLen]...)
		out = append(out, lenBytes...)
		out = append(out, schema[:at]...)
		out = append(out, bytes.Repeat([]byte{' '}, k)...)
		out = append(out, schema[at:]...)
		out = append(out, data[h.schemaEnd:h.end]...)
		return out, true
	}
	return nil, false
}

// plainEnding returns stream, one Avro block's deflate stream, with its
// ending rewritten when it ends as Go's flate Writer ends every stream: an
// empty final stored block, whose header (BFINAL=1, BTYPE=00) is then the
// last set bit before the bytes 00 00 ff ff, followed only by zero bits up
// to the byte boundary. Those bits become an empty final fixed-Huffman
// block: BFINAL=1, BTYPE=01, the end-of-block code 0000000. The rewrite is
// kept only if it inflates to exactly what stream inflates to.
func plainEnding(stream []byte) ([]byte, bool) {
	n := len(stream)
	if n < 5 || !bytes.Equal(stream[n-4:], []byte{0, 0, 0xff, 0xff}) {
		return stream, false
	}
	i := n - 5
	for i >= 0 && stream[i] == 0 {
		i--
	}
	if i < 0 {
		return stream, false
	}
	p := 8*i + bits.Len8(stream[i]) - 1 // the stored block's BFINAL bit
	if q := 8 * (n - 4); p+3 > q || q-(p+3) >= 8 {
		return stream, false
	}
	out := make([]byte, (p+10+7)/8)
	copy(out, stream[:i+1])
	// Bits from p, least significant first: BFINAL 1, BTYPE 01 (1 then 0),
	// then seven zero bits of end-of-block; the rest of the byte is padding.
	out[p/8] &^= 0xff << (p % 8)
	out[p/8] |= 1 << (p % 8)
	q := p + 1
	out[q/8] |= 1 << (q % 8)
	if !sameInflated(stream, out) {
		return stream, false
	}
	return out, true
}

var inflaters sync.Pool // of io.ReadCloser that are flate.Resetter

func inflate(stream []byte) ([]byte, error) {
	r, ok := inflaters.Get().(io.ReadCloser)
	if ok {
		if err := r.(flate.Resetter).Reset(bytes.NewReader(stream), nil); err != nil {
			ok = false
		}
	}
	if !ok {
		r = flate.NewReader(bytes.NewReader(stream))
	}
	defer inflaters.Put(r)
	return io.ReadAll(r)
}

func sameInflated(a, b []byte) bool {
	x, err := inflate(a)
	if err != nil {
		return false
	}
	y, err := inflate(b)
	return err == nil && bytes.Equal(x, y)
}
