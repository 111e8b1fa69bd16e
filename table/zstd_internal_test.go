package table

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"

	"lakehouse/internal/sample"
)

// TestZstdWindowBounded: the zstd codec arrow-go's Parquet writer gets is
// boundedZstd. An encoder of it that compressed a 1 MiB page holds a
// history of about ZstdWindow, not zstd's default 8 MiB (measured as the
// bytes a new encoder allocates, against arrow-go's configuration); its
// output reads back through arrow-go's decoder; and it compresses a page of
// real events as well as arrow-go's own codec (within 1 %).
func TestZstdWindowBounded(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	ours, ok := c.(boundedZstd)
	if !ok {
		t.Fatalf("the registered zstd codec is %T, not boundedZstd", c)
	}
	page := realEventsPage(t, 1<<20)
	// The bytes a new encoder allocates compressing a 1 MiB page are what
	// the pool keeps alive with it: ours against arrow-go's configuration.
	for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
		var m0, m1, m2 runtime.MemStats
		runtime.ReadMemStats(&m0)
		newZstdEncoder(level).EncodeAll(page, nil)
		runtime.ReadMemStats(&m1)
		upstream, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(level),
			zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true))
		if err != nil {
			t.Fatal(err)
		}
		upstream.EncodeAll(page, nil)
		runtime.ReadMemStats(&m2)
		mine, theirs := m1.TotalAlloc-m0.TotalAlloc, m2.TotalAlloc-m1.TotalAlloc
		t.Logf("%s: a new encoder compressing 1 MiB allocated %d KiB (arrow-go's configuration: %d KiB)", level, mine>>10, theirs>>10)
		if mine > 4<<20 {
			t.Errorf("%s: a new encoder compressing 1 MiB allocated %d KiB, want at most 4 MiB (arrow-go's configuration: %d KiB)", level, mine>>10, theirs>>10)
		}
	}
	for _, level := range []int{1, 3, compress.DefaultCompressionLevel} {
		out := c.EncodeLevel(nil, page, level)
		back, err := ours.Codec.(interface {
			DecodeWithError(dst, src []byte) ([]byte, error)
		}).DecodeWithError(nil, out)
		if err != nil {
			t.Fatalf("level %d: arrow-go's decoder: %v", level, err)
		}
		if !bytes.Equal(back, page) {
			t.Fatalf("level %d: round trip differs", level)
		}
		up := ours.Codec.EncodeLevel(nil, page, level)
		t.Logf("level %d: %d bytes -> %d (arrow-go's codec: %d)", level, len(page), len(out), len(up))
		if float64(len(out)) > float64(len(up))*1.01 {
			t.Errorf("level %d: %d bytes against arrow-go's %d: the bounded window costs compression", level, len(out), len(up))
		}
	}
}

// realEventsPage is n bytes of the recorded events file repeated: the
// JSON lines bronze's raw column holds.
func realEventsPage(t *testing.T, n int) []byte {
	b := sample.JSONL()
	return bytes.Repeat(b, n/len(b)+1)[:n]
}
