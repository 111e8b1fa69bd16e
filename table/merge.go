package table

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/internal/gcpace"
)

// What a merge holds in memory (see mergeGroup).
const (
	// mergeBatchRows is the rows read and handed to the writer at a time.
	mergeBatchRows = 256
	// mergeRowGroupRows is the rows of a row group, which the Parquet
	// writer buffers (compressed) until it is complete.
	mergeRowGroupRows = 2048
	// mergePageBytes is the data page size of merged files: the writer
	// encodes a page in memory before compressing it, and the reader
	// decompresses a page at a time.
	mergePageBytes = 512 << 10
	// mergeReadBuffer is the read buffer of a column chunk (without it the
	// reader loads each column chunk whole).
	mergeReadBuffer = 64 << 10
	// mergeWholeFile is the largest file whose column chunks are read
	// whole rather than through a mergeReadBuffer stream.
	mergeWholeFile = 1 << 20
)

// mergeGroup writes the rows of g's data files, file after file in their
// order, into new files of at most target bytes, and returns them as a
// group result for commitRewrite; tbl is the table as mergeTable returns
// it. It streams: at any moment it holds about one batch being read, one
// queued and one being encoded, a page and a row group of output, whatever
// the size of the group, and the collector's target is halved while it
// runs (internal/gcpace). iceberg-go's ExecuteCompactionGroup reads through its scan
// pipeline instead (a goroutine per column, batches queued between reader,
// projection and writer): merging eight files of 15,300 events held 49 MiB
// live against 19 here (BenchmarkCompactTierFootprint). This package never
// writes delete files (its deletes rewrite whole files), and a merge that
// ignored them would bring deleted rows back, so a group with one is
// refused.
func mergeGroup(ctx context.Context, tbl *icetable.Table, g icetable.CompactionTaskGroup, target int64) (icetable.CompactionGroupResult, error) {
	res := icetable.CompactionGroupResult{PartitionKey: g.PartitionKey, BytesBefore: g.TotalSizeBytes}
	for _, t := range g.Tasks {
		if len(t.DeleteFiles) > 0 {
			return res, fmt.Errorf("%s has delete files, which a merge would have to apply", t.File.FilePath())
		}
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	defer gcpace.Pace()()
	schema, err := icetable.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return res, err
	}
	files := icetable.WriteRecords(ctx, tbl, schema, readFiles(ctx, tbl, g.Tasks),
		icetable.WithClusteredWrite(), icetable.WithTargetFileSize(target),
		icetable.WithRecordBatchBufferSize(1), icetable.WithParquetRowGroupLimit(mergeRowGroupRows))
	for df, err := range files {
		if err != nil {
			return res, fmt.Errorf("write merged files: %w", err)
		}
		res.NewDataFiles = append(res.NewDataFiles, df)
		res.BytesAfter += df.FileSizeBytes()
	}
	return res, nil
}

// finalLevel is the zstd level of the files a closed day's merge writes.
// Those files are final: a day that ended is merged once, and its files are
// never rewritten, so they are most of what the warehouse holds after
// weeks. Level 7 (klauspost's "better" encoder) stores a compacted bronze
// file in about 8 % fewer bytes than the tables' level 1, at about twice
// that merge's CPU; every other write keeps level 1, where commit latency
// and the tiers' repeated rewrites are what cost.
const finalLevel = 7

// mergeTable returns tbl with the merge's writer settings (pages of
// mergePageBytes; zstd at finalLevel when final) set on its in-memory
// metadata: iceberg-go's writer takes them from the table. It is only
// written through, never committed.
func mergeTable(tbl *icetable.Table, final bool) (*icetable.Table, error) {
	props := iceberg.Properties{icetable.ParquetPageSizeBytesKey: strconv.Itoa(mergePageBytes)}
	if final {
		props[icetable.ParquetCompressionLevelKey] = strconv.Itoa(finalLevel)
	}
	b, err := icetable.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if err := b.SetProperties(props); err != nil {
		return nil, err
	}
	meta, err := b.Build()
	if err != nil {
		return nil, err
	}
	return icetable.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, nil), nil
}

// errStopped ends readFile when the consumer stops early.
var errStopped = errors.New("stopped")

// readFiles yields the rows of tasks' data files in order, in batches of
// mergeBatchRows, in tbl's current schema (read by field id, as a scan
// does: a renamed column reads under its new name, a missing one as nulls).
func readFiles(ctx context.Context, tbl *icetable.Table, tasks []icetable.FileScanTask) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		fs, err := tbl.FS(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, t := range tasks {
			err := readFile(ctx, fs, tbl, t.File.FilePath(), t.File.FileSizeBytes(), yield)
			if errors.Is(err, errStopped) {
				return
			}
			if err != nil {
				yield(nil, fmt.Errorf("read %s: %w", t.File.FilePath(), err))
				return
			}
		}
	}
}

// readFile yields the rows of one data file (see readFiles).
func readFile(ctx context.Context, fs iceio.IO, tbl *icetable.Table, path string, size int64, yield func(arrow.RecordBatch, error) bool) error {
	f, err := fs.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	mem := compute.GetAllocator(ctx)
	props := parquet.NewReaderProperties(pageAlloc) // the reader's own buffers (pagealloc.go); rows get mem
	// A small file's column chunks are read whole (a few KB each for a
	// second of the stream); a buffered stream would allocate its page
	// header buffer (16 KiB) per chunk, 5 % of the appliance's allocation.
	props.BufferedStreamEnabled = size > mergeWholeFile
	props.BufferSize = mergeReadBuffer
	pf, err := file.NewParquetReader(f, file.WithReadProps(props))
	if err != nil {
		return err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: mergeBatchRows, PreAllocBinaryData: true}, mem)
	if err != nil {
		return err
	}
	as, err := fr.Schema()
	if err != nil {
		return err
	}
	schema, tprops := tbl.Schema(), tbl.Properties()
	fileSchema, err := icetable.ArrowSchemaToIcebergWithOptions(as, icetable.ArrowToIcebergOptions{TableSchema: schema, TableProperties: tprops})
	if err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := icetable.ToRequestedSchema(ctx, schema, fileSchema, rr.RecordBatch(), icetable.SchemaOptions{TableProperties: tprops})
		if err != nil {
			return err
		}
		if !yield(rec, nil) {
			return errStopped
		}
	}
	return rr.Err()
}
