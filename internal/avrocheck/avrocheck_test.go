package avrocheck

import (
	"bytes"
	"compress/flate"
	"errors"
	"math/rand/v2"
	"testing"

	kflate "github.com/klauspost/compress/flate"
)

// TestDeflateWalksWhatEncodersWrite: the walker reads through streams of
// every block type (stored, fixed, dynamic) that zlib-style encoders write,
// ending exactly at the final block (an empty input is one empty final
// fixed-Huffman block there, as zlib writes it); it refuses Go's Close ending (an empty
// final stored block), a sync flush, a truncated stream and bytes after the
// final block.
func TestDeflateWalksWhatEncodersWrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 100_000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := bytes.Repeat([]byte("s3://bucket/warehouse/bronze.db/recentchange/data/00001.parquet "), 2000)
	types := map[int]int{}
	for _, src := range [][]byte{nil, []byte("a"), []byte("abcdefghijklmnopqrstuvwxyz"), text, random, append(append([]byte{}, text[:5000]...), random[:5000]...)} {
		var b bytes.Buffer
		if err := kflate.StatelessDeflate(&b, src, true, nil); err != nil {
			t.Fatal(err)
		}
		blocks, err := Deflate(b.Bytes())
		if err != nil {
			t.Fatalf("stateless stream of %d bytes: %v", len(src), err)
		}
		if !blocks[len(blocks)-1].Final {
			t.Fatal("the last block is not final")
		}
		for _, bl := range blocks {
			types[bl.Type]++
		}
		for _, level := range []int{flate.NoCompression, flate.BestSpeed, flate.DefaultCompression, flate.HuffmanOnly} {
			b.Reset()
			w, _ := flate.NewWriter(&b, level)
			_, _ = w.Write(src)
			_ = w.Close()
			blocks, err := Deflate(b.Bytes())
			if !errors.Is(err, ErrFraming) || len(blocks) == 0 && len(src) > 0 {
				t.Fatalf("Go's flate at level %d on %d bytes: got %v after %d blocks, want the empty final stored block refused", level, len(src), err, len(blocks))
			}
			for _, bl := range blocks {
				types[bl.Type]++
			}
		}
	}
	for typ := range 3 {
		if types[typ] == 0 {
			t.Errorf("inconclusive: no block of type %d walked (%v)", typ, types)
		}
	}

	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.DefaultCompression)
	_, _ = w.Write(text)
	_ = w.Flush()
	if _, err := Deflate(b.Bytes()); err == nil {
		t.Error("a sync-flushed stream without a final block passed")
	}
	b.Reset()
	_ = kflate.StatelessDeflate(&b, text, true, nil)
	whole := b.Bytes()
	if _, err := Deflate(whole[:len(whole)-2]); err == nil {
		t.Error("a truncated stream passed")
	}
	if _, err := Deflate(append(append([]byte{}, whole...), 0)); err == nil {
		t.Error("a byte after the final block passed")
	}
}
