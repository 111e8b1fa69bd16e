// Package avrocheck reads the framing of an Avro object container file
// and of the deflate streams in its blocks, block by block, without
// trusting an inflater: what a reader stricter than zlib meets in a
// manifest. It exists for the tests that check the files the appliance
// writes (every manifest and manifest list of every table); it holds no
// state and writes nothing.
package avrocheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrFraming is wrapped by every error Check and Deflate return.
var ErrFraming = errors.New("avro framing")

// File is what Check found in an Avro object container file.
type File struct {
	Codec string
	// Blocks holds each data block's deflate blocks (for the deflate
	// codec; empty otherwise).
	Blocks [][]Block
	// Records is the sum of the blocks' object counts.
	Records int64
}

// Block is one block of a deflate stream (RFC 1951).
type Block struct {
	Final bool
	Type  int // 0 stored, 1 fixed Huffman, 2 dynamic Huffman
	// Stored is a stored block's length in bytes.
	Stored int
}

// Check reads data as an Avro object container file: the magic, the
// header's metadata map, the sync marker, then every data block (object
// count, byte size, bytes, the same sync marker) to the end of data. With
// the deflate codec it walks each block's stream with Deflate.
func Check(data []byte) (File, error) {
	var f File
	if !bytes.HasPrefix(data, []byte("Obj\x01")) {
		return f, fmt.Errorf("%w: no Avro magic", ErrFraming)
	}
	pos := 4
	long := func(what string) (int64, error) {
		v, n := binary.Varint(data[pos:])
		if n <= 0 {
			return 0, fmt.Errorf("%w: %s at offset %d: not a long", ErrFraming, what, pos)
		}
		pos += n
		return v, nil
	}
	bytesAt := func(what string) ([]byte, error) {
		l, err := long(what + " length")
		if err != nil {
			return nil, err
		}
		if l < 0 || int64(len(data)-pos) < l {
			return nil, fmt.Errorf("%w: %s of %d bytes at offset %d runs past the end", ErrFraming, what, l, pos)
		}
		b := data[pos : pos+int(l)]
		pos += int(l)
		return b, nil
	}
	for {
		count, err := long("metadata block count")
		if err != nil {
			return f, err
		}
		if count == 0 {
			break
		}
		if count < 0 {
			if _, err := long("metadata block size"); err != nil {
				return f, err
			}
			count = -count
		}
		for range count {
			k, err := bytesAt("metadata key")
			if err != nil {
				return f, err
			}
			v, err := bytesAt("metadata value")
			if err != nil {
				return f, err
			}
			if string(k) == "avro.codec" {
				f.Codec = string(v)
			}
		}
	}
	if len(data)-pos < 16 {
		return f, fmt.Errorf("%w: no sync marker", ErrFraming)
	}
	sync := data[pos : pos+16]
	pos += 16
	for pos < len(data) {
		at := pos
		count, err := long("block object count")
		if err != nil {
			return f, err
		}
		payload, err := bytesAt("block")
		if err != nil {
			return f, err
		}
		if len(data)-pos < 16 || !bytes.Equal(data[pos:pos+16], sync) {
			return f, fmt.Errorf("%w: block at offset %d: no sync marker after it", ErrFraming, at)
		}
		pos += 16
		f.Records += count
		if f.Codec == "deflate" {
			bs, err := Deflate(payload)
			if err != nil {
				return f, fmt.Errorf("block at offset %d: %w", at, err)
			}
			f.Blocks = append(f.Blocks, bs)
		}
	}
	return f, nil
}

// Deflate walks a raw deflate stream block by block, decoding every
// Huffman code (without producing output) to find where each block ends.
// It refuses an empty stored block, a stream that ends before a final
// block, and anything after the final block but zero padding bits in its
// last byte.
func Deflate(stream []byte) ([]Block, error) {
	r := &bitReader{b: stream}
	var out []Block
	for {
		final := r.bits(1) == 1
		typ := int(r.bits(2))
		b := Block{Final: final, Type: typ}
		switch typ {
		case 0:
			r.align()
			l, nl := r.bits(16), r.bits(16)
			if r.err == nil && l != ^nl&0xffff {
				return out, fmt.Errorf("%w: stored block %d: LEN %d does not match NLEN", ErrFraming, len(out), l)
			}
			if r.err == nil && l == 0 {
				return out, fmt.Errorf("%w: stored block %d is empty (final %v): a sync-flush style ending", ErrFraming, len(out), final)
			}
			r.skipBytes(int(l))
			b.Stored = int(l)
		case 1:
			r.codes(&fixedLit, &fixedDist)
		case 2:
			lit, dist, err := r.dynamicTables()
			if err != nil {
				return out, fmt.Errorf("block %d: %w", len(out), err)
			}
			r.codes(lit, dist)
		default:
			return out, fmt.Errorf("%w: block %d has the reserved type 3", ErrFraming, len(out))
		}
		if r.err != nil {
			return out, fmt.Errorf("block %d: %w", len(out), r.err)
		}
		out = append(out, b)
		if final {
			break
		}
	}
	if rest := r.rest(); rest != "" {
		return out, fmt.Errorf("%w: after the final block: %s", ErrFraming, rest)
	}
	return out, nil
}

// bitReader reads bits least significant first, as deflate packs them.
type bitReader struct {
	b   []byte
	pos int // in bits
	err error
}

func (r *bitReader) bit() uint32 {
	if r.err != nil {
		return 0
	}
	if r.pos >= 8*len(r.b) {
		r.err = fmt.Errorf("%w: the stream ends inside a block", ErrFraming)
		return 0
	}
	v := uint32(r.b[r.pos/8]>>(r.pos%8)) & 1
	r.pos++
	return v
}

func (r *bitReader) bits(n int) uint32 {
	var v uint32
	for i := range n {
		v |= r.bit() << i
	}
	return v
}

func (r *bitReader) align() { r.pos = (r.pos + 7) / 8 * 8 }

func (r *bitReader) skipBytes(n int) {
	if r.err == nil && r.pos/8+n > len(r.b) {
		r.err = fmt.Errorf("%w: a stored block runs past the end", ErrFraming)
		return
	}
	r.pos += 8 * n
}

// rest describes what follows the final block ("" when only zero padding
// bits of its last byte do).
func (r *bitReader) rest() string {
	end := (r.pos + 7) / 8
	if end < len(r.b) {
		return fmt.Sprintf("%d more bytes", len(r.b)-end)
	}
	if r.pos%8 != 0 && r.b[r.pos/8]>>(r.pos%8) != 0 {
		return "non-zero padding bits"
	}
	return ""
}

// huffman is a canonical Huffman code: how many codes of each length and
// the symbols in code order.
type huffman struct {
	count  [16]int
	symbol []int
}

func newHuffman(lengths []int) (*huffman, error) {
	h := &huffman{symbol: make([]int, 0, len(lengths))}
	for _, l := range lengths {
		h.count[l]++
	}
	left := 1
	for l := 1; l < 16; l++ {
		left = left<<1 - h.count[l]
		if left < 0 {
			return nil, fmt.Errorf("%w: an over-subscribed Huffman code", ErrFraming)
		}
	}
	for l := 1; l < 16; l++ {
		for s, sl := range lengths {
			if sl == l {
				h.symbol = append(h.symbol, s)
			}
		}
	}
	return h, nil
}

// decode reads one symbol of h.
func (r *bitReader) decode(h *huffman) int {
	code, first, index := 0, 0, 0
	for l := 1; l < 16; l++ {
		code |= int(r.bit())
		if r.err != nil {
			return -1
		}
		count := h.count[l]
		if code-first < count {
			return h.symbol[index+code-first]
		}
		index += count
		first = (first + count) << 1
		code <<= 1
	}
	r.err = fmt.Errorf("%w: a code no symbol has", ErrFraming)
	return -1
}

var (
	lengthExtra = [29]int{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distExtra   = [30]int{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	fixedLit    huffman
	fixedDist   huffman
)

func init() {
	lit := make([]int, 288)
	for i := range lit {
		switch {
		case i < 144:
			lit[i] = 8
		case i < 256:
			lit[i] = 9
		case i < 280:
			lit[i] = 7
		default:
			lit[i] = 8
		}
	}
	dist := make([]int, 30)
	for i := range dist {
		dist[i] = 5
	}
	l, _ := newHuffman(lit)
	d, _ := newHuffman(dist)
	fixedLit, fixedDist = *l, *d
}

// codes reads literal/length and distance codes up to the end of block.
func (r *bitReader) codes(lit, dist *huffman) {
	for r.err == nil {
		sym := r.decode(lit)
		switch {
		case sym < 0:
			return
		case sym < 256:
		case sym == 256:
			return
		case sym > 285:
			r.err = fmt.Errorf("%w: length symbol %d", ErrFraming, sym)
			return
		default:
			r.bits(lengthExtra[sym-257])
			d := r.decode(dist)
			if d < 0 || d > 29 {
				if r.err == nil {
					r.err = fmt.Errorf("%w: distance symbol %d", ErrFraming, d)
				}
				return
			}
			r.bits(distExtra[d])
		}
	}
}

var clOrder = [19]int{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// dynamicTables reads a dynamic block's code descriptions.
func (r *bitReader) dynamicTables() (*huffman, *huffman, error) {
	nlen, ndist, ncode := int(r.bits(5))+257, int(r.bits(5))+1, int(r.bits(4))+4
	if nlen > 286 || ndist > 30 {
		return nil, nil, fmt.Errorf("%w: %d length and %d distance codes", ErrFraming, nlen, ndist)
	}
	cl := make([]int, 19)
	for i := range ncode {
		cl[clOrder[i]] = int(r.bits(3))
	}
	clh, err := newHuffman(cl)
	if err != nil {
		return nil, nil, err
	}
	lengths := make([]int, 0, nlen+ndist)
	for len(lengths) < nlen+ndist && r.err == nil {
		sym := r.decode(clh)
		switch {
		case sym < 0:
		case sym < 16:
			lengths = append(lengths, sym)
		default:
			rep, val := 0, 0
			switch sym {
			case 16:
				if len(lengths) == 0 {
					return nil, nil, fmt.Errorf("%w: a repeat with no previous length", ErrFraming)
				}
				val, rep = lengths[len(lengths)-1], 3+int(r.bits(2))
			case 17:
				rep = 3 + int(r.bits(3))
			default:
				rep = 11 + int(r.bits(7))
			}
			if len(lengths)+rep > nlen+ndist {
				return nil, nil, fmt.Errorf("%w: code lengths run past their count", ErrFraming)
			}
			for range rep {
				lengths = append(lengths, val)
			}
		}
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	if lengths[256] == 0 {
		return nil, nil, fmt.Errorf("%w: no end-of-block code", ErrFraming)
	}
	lit, err := newHuffman(lengths[:nlen])
	if err != nil {
		return nil, nil, err
	}
	dist, err := newHuffman(lengths[nlen:])
	if err != nil {
		return nil, nil, err
	}
	return lit, dist, nil
}
