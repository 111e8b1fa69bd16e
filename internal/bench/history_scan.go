package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table"
)

// The benchmark's own reader of a table, the truth the answers of `query`
// are checked against. It shares nothing with the read path of `query`,
// the marts and the checks (a plan of scan tasks handed to DuckDB): it walks
// the current snapshot's manifests, takes each live data file once (a path
// listed twice is an error), and reads the columns it needs from each file
// with arrow-go's Parquet reader, by Iceberg field id, requiring each file
// to hold the rows its manifest entry says.

// liveFile is one live data file of a table.
type liveFile struct {
	path string
	rows int64
}

// tableFiles is a table as its manifests list it.
type tableFiles struct {
	ident  string
	tbl    *icetable.Table
	fs     iceio.IO
	files  []liveFile
	rows   int64
	schema *iceberg.Schema
}

// liveFiles lists ident's live data files from its current snapshot's
// manifests.
func liveFiles(ctx context.Context, lake *table.Lake, ident string) (tableFiles, error) {
	i := strings.LastIndexByte(ident, '.')
	if i <= 0 {
		return tableFiles{}, fmt.Errorf("table %q: want namespace.name", ident)
	}
	tbl, err := lake.Catalog().LoadTable(ctx, icetable.Identifier{ident[:i], ident[i+1:]})
	if err != nil {
		return tableFiles{}, fmt.Errorf("load %s: %w", ident, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return tableFiles{}, fmt.Errorf("file IO of %s: %w", ident, err)
	}
	t := tableFiles{ident: ident, tbl: tbl, fs: fs, schema: tbl.Schema()}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return t, nil
	}
	mans, err := snap.Manifests(fs)
	if err != nil {
		return t, fmt.Errorf("manifests of %s: %w", ident, err)
	}
	seen := map[string]bool{}
	for _, m := range mans {
		if m.ManifestContent() != iceberg.ManifestContentData {
			return t, fmt.Errorf("%s: manifest %s holds deletes, which this reader does not apply", ident, m.FilePath())
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return t, fmt.Errorf("entries of %s: %w", m.FilePath(), err)
			}
			df := e.DataFile()
			if df.ContentType() != iceberg.EntryContentData {
				return t, fmt.Errorf("%s: %s is a delete file", ident, df.FilePath())
			}
			if seen[df.FilePath()] {
				return t, fmt.Errorf("%s: the manifests list %s live twice", ident, df.FilePath())
			}
			seen[df.FilePath()] = true
			t.files = append(t.files, liveFile{df.FilePath(), df.Count()})
			t.rows += df.Count()
		}
	}
	return t, nil
}

// scan reads the named columns of every live file, in file order, calling
// fn with each batch (columns in the order named). It returns the rows
// read, which equal the manifests' count or it fails.
func (t tableFiles) scan(ctx context.Context, cols []string, fn func(arrow.RecordBatch) error) (int64, error) {
	ids := make([]int, len(cols))
	for i, c := range cols {
		f, ok := t.schema.FindFieldByName(c)
		if !ok {
			return 0, fmt.Errorf("%s has no column %q", t.ident, c)
		}
		ids[i] = f.ID
	}
	var total int64
	for _, lf := range t.files {
		n, err := t.scanFile(ctx, lf.path, ids, fn)
		if err != nil {
			return total, fmt.Errorf("read %s: %w", lf.path, err)
		}
		if n != lf.rows {
			return total, fmt.Errorf("%s: %s holds %d rows, its manifest entry %d", t.ident, lf.path, n, lf.rows)
		}
		total += n
	}
	return total, nil
}

func (t tableFiles) scanFile(ctx context.Context, path string, fieldIDs []int, fn func(arrow.RecordBatch) error) (int64, error) {
	f, err := t.fs.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return 0, err
	}
	defer pf.Close()
	sc := pf.MetaData().Schema
	leaves := make([]int, len(fieldIDs))
	for i, id := range fieldIDs {
		leaves[i] = -1
		for c := 0; c < sc.NumColumns(); c++ {
			if int(sc.Column(c).SchemaNode().FieldID()) == id {
				leaves[i] = c
			}
		}
		if leaves[i] < 0 {
			return 0, fmt.Errorf("no column with field id %d", id)
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return 0, err
	}
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	// Map the reader's columns to the ids asked for by their field ids,
	// whatever order it returns them in.
	pos := make([]int, len(fieldIDs))
	for i, id := range fieldIDs {
		pos[i] = -1
		for j, f := range rr.Schema().Fields() {
			if v, ok := f.Metadata.GetValue("PARQUET:field_id"); ok && v == strconv.Itoa(id) {
				pos[i] = j
			}
		}
		if pos[i] < 0 {
			return 0, fmt.Errorf("the reader returned no column with field id %d", id)
		}
	}
	var n int64
	for rr.Next() {
		rec := rr.RecordBatch()
		out := make([]arrow.Array, len(pos))
		fields := make([]arrow.Field, len(pos))
		for i, p := range pos {
			out[i] = rec.Column(p)
			fields[i] = rec.Schema().Field(p)
		}
		ordered := array.NewRecordBatch(arrow.NewSchema(fields, nil), out, rec.NumRows())
		err := fn(ordered)
		ordered.Release()
		if err != nil {
			return n, err
		}
		n += rec.NumRows()
	}
	return n, rr.Err()
}

// strings of a string column (plain, large or dictionary-encoded).
func stringsOf(a arrow.Array) (func(int) string, error) {
	switch c := a.(type) {
	case *array.String:
		return c.Value, nil
	case *array.LargeString:
		return c.Value, nil
	case *array.Dictionary:
		vals, err := stringsOf(c.Dictionary())
		if err != nil {
			return nil, err
		}
		return func(i int) string { return vals(c.GetValueIndex(i)) }, nil
	}
	return nil, fmt.Errorf("column of %s, want strings", a.DataType())
}

// microsOf reads a timestamp column as Unix microseconds.
func microsOf(a arrow.Array) (func(int) int64, error) {
	c, ok := a.(*array.Timestamp)
	if !ok {
		return nil, fmt.Errorf("column of %s, want a timestamp", a.DataType())
	}
	unit := c.DataType().(*arrow.TimestampType).Unit
	mult, div := int64(1), int64(1)
	switch unit {
	case arrow.Second:
		mult = 1_000_000
	case arrow.Millisecond:
		mult = 1000
	case arrow.Nanosecond:
		div = 1000
	}
	return func(i int) int64 { return int64(c.Value(i)) * mult / div }, nil
}

// intsOf reads an int32 or int64 column.
func intsOf(a arrow.Array) (func(int) int64, error) {
	switch c := a.(type) {
	case *array.Int32:
		return func(i int) int64 { return int64(c.Value(i)) }, nil
	case *array.Int64:
		return c.Value, nil
	}
	return nil, fmt.Errorf("column of %s, want integers", a.DataType())
}
