package table

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// ZstdWindow is the zstd window of every Parquet page this process
// compresses (see boundedZstd).
const ZstdWindow = 1 << 20

// boundedZstd is the Parquet zstd codec this package registers in place of
// arrow-go's (compress.RegisterCodec is arrow-go's hook for that). arrow-go
// keeps a pool of zstd encoders with the library's default 8 MiB window; an
// encoder that once compressed a page larger than one zstd block (128 KiB:
// a bronze batch of about a hundred events, a burst, any compaction) keeps
// a history buffer of the whole window, and the streaming commits that
// reuse it every second keep it alive: at 35 ev/s each burst to 100 ev/s
// held 8 to 16 MiB more live heap for about a minute (the soak's heap
// profiles). A 1 MiB window covers a whole default-sized data page, so
// pages compress as before; an encoder's history is then at most about
// 1.1 MiB. Decoding, and the streaming reader and writer, stay arrow-go's.
type boundedZstd struct {
	compress.Codec // arrow-go's zstd codec
}

// zstdEncoders holds a *sync.Pool of *zstd.Encoder per level.
var zstdEncoders sync.Map

func zstdEncoder(level zstd.EncoderLevel) (*zstd.Encoder, *sync.Pool) {
	p, ok := zstdEncoders.Load(level)
	if !ok {
		p, _ = zstdEncoders.LoadOrStore(level, &sync.Pool{New: func() any { return newZstdEncoder(level) }})
	}
	pool := p.(*sync.Pool)
	return pool.Get().(*zstd.Encoder), pool
}

// newZstdEncoder is arrow-go's encoder configuration with the window bound.
func newZstdEncoder(level zstd.EncoderLevel) *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(level),
		zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true),
		zstd.WithWindowSize(ZstdWindow))
	if err != nil {
		panic("table: zstd encoder options: " + err.Error()) // constant options: a programming error
	}
	return enc
}

func (boundedZstd) Encode(dst, src []byte) []byte {
	return boundedZstd{}.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

// EncodeLevel maps levels as arrow-go does (zstd's numbering; the default
// level is zstd's default).
func (boundedZstd) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.EncoderLevelFromZstd(level)
	if level == compress.DefaultCompressionLevel {
		l = zstd.SpeedDefault
	}
	enc, pool := zstdEncoder(l)
	defer pool.Put(enc)
	return enc.EncodeAll(src, dst[:0])
}

func init() {
	upstream, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		panic("table: arrow-go has no zstd codec: " + err.Error())
	}
	compress.RegisterCodec(compress.Codecs.Zstd, boundedZstd{upstream})
}
