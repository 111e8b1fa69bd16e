package table_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// avroEntry is shaped like a manifest-list entry: what iceberg-go writes
// through ocf a few times per commit.
type avroEntry struct {
	Path   string `avro:"path"`
	Length int64  `avro:"length"`
	Added  int32  `avro:"added"`
}

const avroEntrySchema = `{"type":"record","name":"entry","fields":[
	{"name":"path","type":"string"},{"name":"length","type":"long"},{"name":"added","type":"int"}]}`

func writeAvroFile(s *avro.Schema, n int) ([]byte, error) {
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, s, ocf.WithCodec(ocf.DeflateCodec(-1)))
	if err != nil {
		return nil, err
	}
	for i := range n {
		if err := w.Encode(avroEntry{Path: fmt.Sprintf("file:///w/data/%05d.parquet", i), Length: int64(i) * 1000, Added: int32(i)}); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func readAvroFile(b []byte) (*avro.Schema, []avroEntry, error) {
	rd, err := ocf.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	var out []avroEntry
	for {
		var e avroEntry
		err := rd.Decode(&e)
		if errors.Is(err, io.EOF) {
			return rd.Schema(), out, nil
		}
		if err != nil {
			return nil, nil, err
		}
		out = append(out, e)
	}
}

// roundTrip writes a file of n entries and reads it back.
func roundTrip(s *avro.Schema, n int) (*avro.Schema, []avroEntry, error) {
	b, err := writeAvroFile(s, n)
	if err != nil {
		return nil, nil, err
	}
	return readAvroFile(b)
}

// TestAvroCodecPatched: the replace of github.com/twmb/avro in go.mod
// (internal/thirdparty/avro, PATCH.md) is in effect. Upstream allocates a
// new flate writer (about 800 KB) for every block it deflates and parses
// every schema anew; iceberg-go does both a few times per commit. Writing a
// small deflated file must allocate far less than one flate writer, two
// reads of a file must hand out the same parsed schema, and files written
// and read from many goroutines at once must round-trip.
func TestAvroCodecPatched(t *testing.T) {
	s, err := avro.Parse(avroEntrySchema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeAvroFile(s, 10); err != nil { // the pool's first writer
		t.Fatal(err)
	}

	const files = 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range files {
		if _, err := writeAvroFile(s, 10); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perFile := (after.TotalAlloc - before.TotalAlloc) / files
	t.Logf("%d bytes allocated per small deflated file", perFile)
	if perFile > 200<<10 {
		t.Fatalf("writing a small deflated OCF file allocated %d bytes: the flate writer is not reused (is the twmb/avro replace in go.mod gone?)", perFile)
	}

	s1, _, err := roundTrip(s, 10)
	if err != nil {
		t.Fatal(err)
	}
	s2, _, err := roundTrip(s, 10)
	if err != nil {
		t.Fatal(err)
	}
	if s1 != s2 {
		t.Fatal("two reads of the same file parsed its header schema twice: the schema cache is not in effect")
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				n := 1 + (g*50+i)%40
				_, got, err := roundTrip(s, n)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d file %d: %w", g, i, err)
					return
				}
				if len(got) != n {
					errs <- fmt.Errorf("goroutine %d file %d: read %d entries, wrote %d", g, i, len(got), n)
					return
				}
				for j, e := range got {
					if e.Added != int32(j) || e.Length != int64(j)*1000 || e.Path != fmt.Sprintf("file:///w/data/%05d.parquet", j) {
						errs <- fmt.Errorf("goroutine %d file %d entry %d: %+v", g, i, j, e)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// avroEntryWide is avroEntry read through a reader schema with one more
// field (its default filled in): a resolution, not the identical-schema
// shortcut.
type avroEntryWide struct {
	avroEntry
	Extra int32 `avro:"extra"`
}

// TestAvroResolvePatched: opening files with a reader schema resolves the
// writer's and the reader's schema once per pair (the same resolved schema
// comes back for a second file), and what is read through it is right:
// every value, and the reader-only field's default.
func TestAvroResolvePatched(t *testing.T) {
	writer := avro.MustParse(avroEntrySchema)
	reader := avro.MustParse(`{"type":"record","name":"entry","fields":[
	{"name":"path","type":"string"},{"name":"length","type":"long"},{"name":"added","type":"int"},
	{"name":"extra","type":"int","default":7}]}`)
	var resolved []*avro.Schema
	for n := range 3 {
		b, err := writeAvroFile(writer, 5+n)
		if err != nil {
			t.Fatal(err)
		}
		rd, err := ocf.NewReader(bytes.NewReader(b), ocf.WithReaderSchema(reader))
		if err != nil {
			t.Fatal(err)
		}
		resolved = append(resolved, rd.Schema())
		for i := range 5 + n {
			var e avroEntryWide
			if err := rd.Decode(&e); err != nil {
				t.Fatalf("file %d record %d: %v", n, i, err)
			}
			want := avroEntryWide{avroEntry{Path: fmt.Sprintf("file:///w/data/%05d.parquet", i), Length: int64(i) * 1000, Added: int32(i)}, 7}
			if e != want {
				t.Fatalf("file %d record %d: got %+v, want %+v", n, i, e, want)
			}
		}
		var e avroEntryWide
		if err := rd.Decode(&e); !errors.Is(err, io.EOF) {
			t.Fatalf("file %d: after the last record: %v, want EOF", n, err)
		}
	}
	if resolved[0] == reader {
		t.Fatal("inconclusive: the reader schema came back unresolved (identical schemas)")
	}
	if resolved[1] != resolved[0] || resolved[2] != resolved[0] {
		t.Fatal("each file resolved the same writer and reader schemas again: the Resolve patch is not in effect")
	}
}
