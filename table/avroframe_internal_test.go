package table

import (
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"

	"lakehouse/internal/avrocheck"
)

// avroFiles reads every .avro file under dir.
func avroFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".avro") {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestManifestsEndTheirDeflateStreamsPlainly: a table committed to with
// iceberg-go's manifests as the library writes them (reframing off) has
// Avro blocks whose deflate streams end in an empty stored block, which the
// strict reader refuses; the next commits, reframed, write manifests and
// manifest lists that it reads through (no empty stored block, the last
// block final, nothing after it), each file exactly as long as the manifest
// list records it; and every row, under old manifests and new, scans.
func TestManifestsEndTheirDeflateStreamsPlainly(t *testing.T) {
	ctx := context.Background()
	l := openWithTables(t)
	commit := func(id int64) {
		t.Helper()
		if _, err := l.CommitBatch(ctx, StreamProgress, Batch{Query: "q", ID: id, Records: []arrow.RecordBatch{progressRecord()}}); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(l.Warehouse(), "ops.db")
	reframeAvro = false
	t.Cleanup(func() { reframeAvro = true })
	for id := range int64(3) {
		commit(id)
	}
	old := avroFiles(t, dir)
	faulty := 0
	for p, b := range old {
		_, err := avrocheck.Check(b)
		if err != nil && strings.Contains(err.Error(), "empty") {
			faulty++
		} else {
			t.Logf("%s as iceberg-go writes it: %v", filepath.Base(p), err)
		}
	}
	if faulty == 0 || faulty != len(old) {
		t.Fatalf("inconclusive: %d of %d files iceberg-go wrote end a deflate stream in an empty stored block; want all", faulty, len(old))
	}

	reframeAvro = true
	for id := int64(3); id < 6; id++ {
		commit(id)
	}
	fresh := 0
	for p, b := range avroFiles(t, dir) {
		if _, ok := old[p]; ok {
			continue
		}
		fresh++
		f, err := avrocheck.Check(b)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		if f.Codec != "deflate" || len(f.Blocks) == 0 {
			t.Errorf("%s: codec %q, %d blocks: want deflate blocks", filepath.Base(p), f.Codec, len(f.Blocks))
		}
	}
	if fresh < 6 {
		t.Fatalf("inconclusive: the reframed commits wrote %d .avro files, want a manifest and a list each", fresh)
	}

	tbl, err := l.load(ctx, StreamProgress)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[bool]int{}
	for _, m := range manifests {
		st, err := os.Stat(strings.TrimPrefix(m.FilePath(), "file://"))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != m.Length() {
			t.Errorf("%s: %d bytes on disk, %d in the manifest list", filepath.Base(m.FilePath()), st.Size(), m.Length())
		}
		_, isOld := old[m.FilePath()]
		seen[isOld]++
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Fatalf("inconclusive: the current snapshot lists %d old and %d new manifests, want both", seen[true], seen[false])
	}
	recs, err := l.Scan(ctx, StreamProgress)
	if err != nil {
		t.Fatal(err)
	}
	rows := int64(0)
	for _, r := range recs {
		rows += r.NumRows()
		r.Release()
	}
	if rows != 6 {
		t.Errorf("scan: %d rows, want 6 (3 under old manifests, 3 under new)", rows)
	}
}

var testAvroSchema = avro.MustParse(`{"type":"record","name":"r","fields":[{"name":"b","type":"bytes"},{"name":"n","type":"long"}]}`)

type testRecord struct {
	B []byte `avro:"b"`
	N int64  `avro:"n"`
}

// writeOCF writes records as twmb/avro's OCF writer does with the deflate
// codec at level, in blocks of blockCount records.
func writeOCF(t testing.TB, recs []testRecord, level, blockCount int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, testAvroSchema, ocf.WithCodec(ocf.DeflateCodec(level)), ocf.WithBlockCount(blockCount),
		ocf.WithMetadata(map[string][]byte{"k": []byte("v")}))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readOCF(data []byte) ([]testRecord, map[string][]byte, error) {
	rd, err := ocf.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	var out []testRecord
	for {
		var r testRecord
		err := rd.Decode(&r)
		if errors.Is(err, io.EOF) {
			return out, rd.Metadata(), nil
		}
		if err != nil {
			return nil, nil, err
		}
		out = append(out, r)
	}
}

// checkReframed holds reframe to its promises for one file: the same
// length, the same records and metadata (but avro.schema's whitespace), and
// every deflate stream plain.
func checkReframed(t testing.TB, data []byte) {
	t.Helper()
	out := reframe(data)
	if len(out) != len(data) {
		t.Fatalf("reframed: %d bytes, want %d", len(out), len(data))
	}
	want, wantMeta, err := readOCF(data)
	if err != nil {
		t.Fatalf("inconclusive: the writer's own file does not read: %v", err)
	}
	got, gotMeta, err := readOCF(out)
	if err != nil {
		t.Fatalf("the reframed file does not read: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("reframed: %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].B, want[i].B) || got[i].N != want[i].N {
			t.Fatalf("record %d differs after reframing", i)
		}
	}
	for k, v := range wantMeta {
		g := gotMeta[k]
		if k == "avro.schema" {
			g = bytes.ReplaceAll(g, []byte(" "), nil)
			v = bytes.ReplaceAll(v, []byte(" "), nil)
		}
		if !bytes.Equal(g, v) {
			t.Fatalf("metadata %s: %q, want %q", k, g, v)
		}
	}
	if _, err := avrocheck.Check(out); err != nil {
		t.Fatalf("reframed file: %v", err)
	}
}

// TestReframeKeepsRecordsAndLength: files of one to many blocks, small
// and large, compressible and not, at every deflate level, reframe to files
// of the same length with the same records whose every deflate stream the
// strict reader reads through; the writer's own files do not pass it.
func TestReframeKeepsRecordsAndLength(t *testing.T) {
	random := make([]byte, 200_000)
	for i := range random {
		random[i] = byte(uint32(i)*2654435761>>13 + uint32(i>>7))
	}
	for _, tc := range []struct {
		name       string
		records    int
		size       int
		blockCount int
	}{
		{"one small record", 1, 10, 100},
		{"one block", 50, 300, 100},
		{"many blocks", 500, 300, 7},
		{"large records", 20, 40_000, 3},
	} {
		for _, level := range []int{flate.DefaultCompression, flate.NoCompression, flate.BestSpeed, flate.BestCompression, flate.HuffmanOnly} {
			var recs []testRecord
			for i := range tc.records {
				b := []byte(strings.Repeat("s3://bucket/warehouse/bronze.db/recentchange/data/", 1+tc.size/50)[:tc.size])
				if i%2 == 1 {
					b = random[i : i+tc.size]
				}
				recs = append(recs, testRecord{B: b, N: int64(i)})
			}
			data := writeOCF(t, recs, level, tc.blockCount)
			if _, err := avrocheck.Check(data); err == nil {
				t.Fatalf("%s, level %d: inconclusive: the writer's file passes the strict reader", tc.name, level)
			}
			checkReframed(t, data)
		}
	}
}

// TestReframeLeavesOtherFilesAlone: a file with another codec, a
// truncated file, and a block whose stream does not end as Go's writer
// ends it are written as they came.
func TestReframeLeavesOtherFilesAlone(t *testing.T) {
	recs := []testRecord{{B: []byte("abc"), N: 1}}
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, testAvroSchema)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Encode(recs[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	deflated := writeOCF(t, recs, flate.DefaultCompression, 10)
	for name, data := range map[string][]byte{
		"null codec": buf.Bytes(),
		"truncated":  deflated[:len(deflated)-3],
		"not avro":   []byte("PAR1 not an avro file"),
	} {
		if got := reframe(data); !bytes.Equal(got, data) {
			t.Errorf("%s: reframe changed it", name)
		}
	}
	// A stream that ends in a sync flush (BFINAL=0) is not Go's Close
	// ending: the last set bit is not a stored header's.
	var s bytes.Buffer
	fw, _ := flate.NewWriter(&s, flate.DefaultCompression)
	_, _ = fw.Write([]byte("manifest entry manifest entry manifest entry"))
	_ = fw.Flush()
	if got, changed := plainEnding(s.Bytes()); changed || !bytes.Equal(got, s.Bytes()) {
		t.Error("a sync-flushed stream without a final block was rewritten")
	}
}

// FuzzReframe: whatever records, levels and block sizes, a file twmb/avro
// writes reframes to one of the same length with the same records and
// plain deflate streams.
func FuzzReframe(f *testing.F) {
	f.Add([]byte("hello"), uint8(3), uint8(1), uint8(6))
	f.Add(bytes.Repeat([]byte{0}, 1000), uint8(40), uint8(5), uint8(9))
	f.Fuzz(func(t *testing.T, seed []byte, n, blockCount, level uint8) {
		if len(seed) == 0 {
			seed = []byte{0}
		}
		var recs []testRecord
		for i := range int(n) + 1 {
			k := (i * 7) % len(seed)
			recs = append(recs, testRecord{B: seed[k:], N: int64(i) * int64(len(seed))})
		}
		lv := int(level%11) - 1
		if level%13 == 12 {
			lv = flate.HuffmanOnly
		}
		checkReframed(t, writeOCF(t, recs, lv, int(blockCount%9)+1))
	})
}
