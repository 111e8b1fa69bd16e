package table

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
)

// Snapshot is a committed snapshot of a table.
type Snapshot struct {
	ID          int64
	Sequence    int64
	TimestampMs int64
	Summary     map[string]string // operation under "operation", plus the summary properties
}

// AddedBytes is the in-memory size of the rows the snapshot added
// (SummaryAddedBytes), or, for a snapshot written without it, the size of
// its added data files (Iceberg's added-files-size, compressed); 0 when it
// has neither.
func (s Snapshot) AddedBytes() int64 {
	for _, k := range []string{SummaryAddedBytes, "added-files-size"} {
		if n, err := strconv.ParseInt(s.Summary[k], 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return 0
}

func toSnapshot(s icetable.Snapshot) Snapshot {
	sum := map[string]string{}
	if s.Summary != nil {
		for k, v := range s.Summary.Properties {
			sum[k] = v
		}
		sum["operation"] = string(s.Summary.Operation)
	}
	return Snapshot{ID: s.SnapshotID, Sequence: s.SequenceNumber, TimestampMs: s.TimestampMs, Summary: sum}
}

// mainAncestry returns main's snapshots newest first.
func mainAncestry(tbl *icetable.Table) []icetable.Snapshot {
	head := tbl.Metadata().SnapshotByName(icetable.MainBranch)
	if head == nil {
		return nil
	}
	return icetable.AncestorsOf(head.SnapshotID, tbl.Metadata().SnapshotByID)
}

// AppendsAfter returns the committed append snapshots of ident strictly after
// snapshot after (0 = from the oldest retained), in commit order. Replace
// snapshots from compaction and overwrites are skipped (they add no new
// rows). It returns ErrSnapshotNotFound if after is no longer in main's
// history (it was expired: a reader must protect what it has not consumed).
// The Snapshots' Summary maps are shared between calls: read them only.
func (l *Lake) AppendsAfter(ctx context.Context, ident string, after int64) ([]Snapshot, error) {
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return nil, err
	}
	h := l.appendHistoryOf(ident, tbl)
	found := after == 0
	var out []Snapshot
	for _, a := range h.ancestors {
		if a.id == after {
			found = true
			break
		}
		if a.append {
			out = append(out, a.snap)
		}
	}
	if !found {
		return nil, fmt.Errorf("appends after %d in %s: %w", after, ident, ErrSnapshotNotFound)
	}
	slices.Reverse(out)
	return out, nil
}

// appendHistory is main's ancestry in one metadata file, newest first, with
// the Snapshot of each append. Downstream queries ask AppendsAfter on every poll and batch, and
// iceberg-go's accessors clone each snapshot they hand out, summary map
// included, so the walk is done once per metadata file. The Snapshots'
// summaries are shared by every caller and must not be changed.
type appendHistory struct {
	loc       string
	ancestors []ancestor
}

type ancestor struct {
	id     int64
	append bool
	snap   Snapshot // set for an append only
}

func (l *Lake) appendHistoryOf(ident string, tbl *icetable.Table) appendHistory {
	loc := tbl.MetadataLocation()
	l.appendsMu.Lock()
	h, ok := l.appends[ident]
	l.appendsMu.Unlock()
	if ok && h.loc == loc {
		return h
	}
	h = appendHistory{loc: loc}
	for _, s := range mainAncestry(tbl) {
		a := ancestor{id: s.SnapshotID, append: s.Summary != nil && s.Summary.Operation == icetable.OpAppend}
		if a.append {
			a.snap = toSnapshot(s)
		}
		h.ancestors = append(h.ancestors, a)
	}
	l.appendsMu.Lock()
	if l.appends == nil {
		l.appends = map[string]appendHistory{}
	}
	l.appends[ident] = h
	l.appendsMu.Unlock()
	return h
}

// ReadAppended returns the rows added by snapshot snapshotID of ident, in the
// table's current Arrow schema (not the schema the snapshot was written
// with: a column renamed since reads under its new name). The caller
// releases the records.
func (l *Lake) ReadAppended(ctx context.Context, ident string, snapshotID int64) ([]arrow.RecordBatch, error) {
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return nil, err
	}
	if tbl.SnapshotByID(snapshotID) == nil {
		return nil, fmt.Errorf("read snapshot %d of %s: %w", snapshotID, ident, ErrSnapshotNotFound)
	}
	return l.readAppended(ctx, ident, tbl, snapshotID)
}

func (l *Lake) readAppended(ctx context.Context, ident string, tbl *icetable.Table, snapshotID int64) ([]arrow.RecordBatch, error) {
	tasks, err := planFiles(ctx, ident, tbl.NewIncrementalAppendScan().
		FromSnapshotInclusive(snapshotID).ToSnapshot(snapshotID).PlanFiles)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", snapshotID, err)
	}
	// A scan without a snapshot id reads with the current schema (one with
	// WithSnapshotID would use the snapshot's own, with the old names); the
	// tasks already name the snapshot's files.
	return readTasks(ctx, tbl.Scan(), tasks)
}

func readTasks(ctx context.Context, scan *icetable.Scan, tasks []icetable.FileScanTask) ([]arrow.RecordBatch, error) {
	if len(tasks) == 0 {
		return nil, nil
	}
	_, it, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		return nil, fmt.Errorf("read data files: %w", err)
	}
	return collect(it)
}

func collect(it func(func(arrow.RecordBatch, error) bool)) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	for rec, err := range it {
		if err != nil {
			for _, r := range out {
				r.Release()
			}
			return nil, fmt.Errorf("read data files: %w", err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// Scan returns every live row of ident. The caller releases the records.
func (l *Lake) Scan(ctx context.Context, ident string) ([]arrow.RecordBatch, error) {
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return nil, err
	}
	if tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	_, it, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", ident, err)
	}
	recs, err := collect(it)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", ident, err)
	}
	return recs, nil
}

// ScanEach calls fn with each batch of ident's live rows, and releases the
// batch when fn returns: fn copies whatever it keeps (a string Value of an
// Arrow column points into the batch's buffers). Unlike Scan it never holds
// the whole table, only the batches the reader has in flight. It stops at
// fn's first error and returns it as is; a table with no snapshot calls fn
// never.
func (l *Lake) ScanEach(ctx context.Context, ident string, fn func(arrow.RecordBatch) error) error {
	return l.scanEach(ctx, ident, fn)
}

// scanColumnsBatch is the most rows a ScanColumns batch holds.
const scanColumnsBatch = 4096

// ScanColumns is ScanEach reading only the named columns, one data file at
// a time, in batches of at most 4,096 rows: the batches fn sees hold those
// columns alone, and the scan holds one such batch (and the file's page
// buffers) whatever the size of the table or its files. ScanEach decodes
// files in parallel and holds the decoded batches of a file while an
// earlier one is returned: hundreds of MiB for large bronze files. A
// reader of a whole table that keeps little of each row (verify) wants
// this one.
func (l *Lake) ScanColumns(ctx context.Context, ident string, cols []string, fn func(arrow.RecordBatch) error) error {
	return l.scanEach(ctx, ident, fn, icetable.WithSelectedFields(cols...),
		icetable.WithMaxConcurrency(1), icetable.WithArrowBatchSize(scanColumnsBatch))
}

// ScanColumnsFrom is ScanColumns over the rows whose timestamp column is at
// or after from: files whose column statistics end before it are not read,
// and the rows of the others are filtered. column must be one of cols.
func (l *Lake) ScanColumnsFrom(ctx context.Context, ident string, cols []string, column string, from time.Time, fn func(arrow.RecordBatch) error) error {
	return l.scanEach(ctx, ident, fn, icetable.WithSelectedFields(cols...),
		icetable.WithMaxConcurrency(1), icetable.WithArrowBatchSize(scanColumnsBatch),
		icetable.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference(column), iceberg.Timestamp(from.UnixMicro()))))
}

func (l *Lake) scanEach(ctx context.Context, ident string, fn func(arrow.RecordBatch) error, opts ...icetable.ScanOption) error {
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return err
	}
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	_, it, err := tbl.Scan(opts...).ToArrowRecords(ctx)
	if err != nil {
		return fmt.Errorf("scan %s: %w", ident, err)
	}
	for rec, err := range it {
		if err != nil {
			return fmt.Errorf("scan %s: read data files: %w", ident, err)
		}
		ferr := fn(rec)
		rec.Release()
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// Files lists the live data files of a table for an external reader.
type Files struct {
	Paths []string // local paths or s3:// URIs
	// Schema is the table's current schema: a reader maps the files'
	// columns by its field ids (a renamed column keeps its id).
	Schema *iceberg.Schema
	// SnapshotID is the snapshot the list was planned from (0: empty table).
	SnapshotID int64
	// TableUUID is the table's Iceberg UUID: a table dropped and created
	// again under the same name has another.
	TableUUID string
	// Properties are the table's properties at the metadata the list was
	// planned from. Overwritten reports that the live files are exactly
	// those the table's last Overwrite left: what that Overwrite set in
	// Properties still describes the rows.
	Properties  map[string]string
	Overwritten bool
	// Rows is the files' record count, from the manifests.
	Rows int64
	// Bounds, from DataFilesWithBounds, holds per path the range of one
	// timestamp column from the file's Iceberg column statistics.
	Bounds []TimeBounds
	// Ranges, from DataFilesWithRange, holds per path the range of one
	// integer column, the same way.
	Ranges []IntRange
}

// IntRange is the range of an integer column in one data file, from its
// manifest entry; OK is false when the file carries no bounds for it.
type IntRange struct {
	Lower, Upper int64
	OK           bool
}

// TimeBounds is the range of a timestamp column in one data file, from
// its manifest entry (Iceberg keeps timestamps' bounds exact, not
// truncated). OK is false when the file carries no bounds for the column
// (a reader must then assume any value); Rows is the file's record count.
type TimeBounds struct {
	Lower, Upper time.Time
	OK           bool
	Rows         int64
}

// DataFiles lists the live data files of ident's current snapshot with the
// table's schema, for a reader that maps columns by field id (DuckDB's
// read_parquet with a schema map, see package marts). This package never
// writes delete files, so the list is the whole table.
func (l *Lake) DataFiles(ctx context.Context, ident string) (Files, error) {
	return l.dataFiles(ctx, ident, "", false, 0)
}

// DataFilesWithBounds is DataFiles with Files.Bounds filled for the
// timestamp column named column: what a reader needs to skip files by time
// without opening them (the marts rebuild only the days that changed).
func (l *Lake) DataFilesWithBounds(ctx context.Context, ident, column string) (Files, error) {
	if column == "" {
		return Files{}, fmt.Errorf("data files of %s: no bounds column named", ident)
	}
	return l.dataFiles(ctx, ident, column, false, 0)
}

// DataFilesWithRange is DataFiles with Files.Ranges filled for the int32
// or int64 column named column (bronze's broker_offset: a reader of new
// offsets skips the files that end below them).
func (l *Lake) DataFilesWithRange(ctx context.Context, ident, column string) (Files, error) {
	if column == "" {
		return Files{}, fmt.Errorf("data files of %s: no range column named", ident)
	}
	return l.dataFiles(ctx, ident, column, true, 0)
}

// DataFilesAt is DataFiles at snapshot at of ident (a leased one: see
// Lease) instead of the current one; ErrSnapshotNotFound if the table no
// longer holds it. Files.Overwritten is not set.
func (l *Lake) DataFilesAt(ctx context.Context, ident string, at int64) (Files, error) {
	if at == 0 {
		return l.DataFiles(ctx, ident)
	}
	return l.dataFiles(ctx, ident, "", false, at)
}

// dataFiles plans ident's live files at snapshot at (0: the current one),
// with the bounds of column: a timestamp's (Bounds), or with wantInt an
// integer's (Ranges).
func (l *Lake) dataFiles(ctx context.Context, ident, column string, wantInt bool, at int64) (Files, error) {
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return Files{}, err
	}
	fieldID := -1
	if column != "" {
		f, ok := tbl.Schema().FindFieldByName(column)
		if !ok {
			return Files{}, fmt.Errorf("data files of %s: no column %q", ident, column)
		}
		isInt, isTime := false, false
		switch f.Type.(type) {
		case iceberg.TimestampTzType, iceberg.TimestampType:
			isTime = true
		case iceberg.Int32Type, iceberg.Int64Type:
			isInt = true
		}
		if wantInt && !isInt || !wantInt && !isTime {
			return Files{}, fmt.Errorf("data files of %s: column %q is %s, not a %s", ident, column, f.Type, map[bool]string{true: "integer", false: "timestamp"}[wantInt])
		}
		fieldID = f.ID
	}
	out := Files{Schema: tbl.Schema(), Paths: []string{}, TableUUID: tbl.Metadata().TableUUID().String(), Properties: tbl.Properties()}
	snap := tbl.CurrentSnapshot()
	scan := tbl.Scan()
	if at != 0 {
		if snap = tbl.SnapshotByID(at); snap == nil {
			return Files{}, fmt.Errorf("data files of %s at snapshot %d: %w", ident, at, ErrSnapshotNotFound)
		}
		scan = tbl.Scan(icetable.WithSnapshotID(at))
	}
	if snap == nil {
		out.Overwritten = tbl.Properties()[propOverwritten] == filesDigest(nil)
		return out, nil
	}
	out.SnapshotID = snap.SnapshotID
	tasks, err := planFiles(ctx, ident, scan.PlanFiles)
	if err != nil {
		return Files{}, err
	}
	live := make([]iceberg.DataFile, 0, len(tasks))
	for _, t := range tasks {
		live = append(live, t.File)
		if len(t.DeleteFiles) > 0 {
			return Files{}, fmt.Errorf("data files of %s: %s has delete files, which read_parquet would ignore", ident, t.File.FilePath())
		}
		p, err := l.localPath(t.File.FilePath())
		if err != nil {
			return Files{}, fmt.Errorf("data files of %s: %w", ident, err)
		}
		out.Paths = append(out.Paths, p)
		out.Rows += t.File.Count()
		switch {
		case fieldID >= 0 && wantInt:
			out.Ranges = append(out.Ranges, intRange(t.File, fieldID))
		case fieldID >= 0:
			out.Bounds = append(out.Bounds, timeBounds(t.File, fieldID))
		}
	}
	out.Overwritten = at == 0 && tbl.Properties()[propOverwritten] == filesDigest(live)
	return out, nil
}

// timeBounds decodes a timestamp column's bounds from a data file's
// statistics (8-byte little-endian microseconds, Iceberg's single-value
// serialization).
func timeBounds(f iceberg.DataFile, fieldID int) TimeBounds {
	b := TimeBounds{Rows: f.Count()}
	lo, hi := f.LowerBoundValues()[fieldID], f.UpperBoundValues()[fieldID]
	if len(lo) != 8 || len(hi) != 8 {
		return b
	}
	b.Lower = time.UnixMicro(int64(binary.LittleEndian.Uint64(lo))).UTC()
	b.Upper = time.UnixMicro(int64(binary.LittleEndian.Uint64(hi))).UTC()
	b.OK = true
	return b
}

// intRange decodes an integer column's bounds from a data file's
// statistics (4- or 8-byte little-endian, Iceberg's single-value
// serialization).
func intRange(f iceberg.DataFile, fieldID int) IntRange {
	dec := func(b []byte) (int64, bool) {
		switch len(b) {
		case 4:
			return int64(int32(binary.LittleEndian.Uint32(b))), true
		case 8:
			return int64(binary.LittleEndian.Uint64(b)), true
		}
		return 0, false
	}
	lo, okL := dec(f.LowerBoundValues()[fieldID])
	hi, okH := dec(f.UpperBoundValues()[fieldID])
	return IntRange{Lower: lo, Upper: hi, OK: okL && okH}
}

// localPath is where a path the metadata names is for a reader outside
// iceberg-go: on local disk, resolved inside the warehouse (see rootedFS);
// an s3:// URI as it is.
func (l *Lake) localPath(name string) (string, error) {
	if l.rooted == nil {
		return name, nil
	}
	return l.rooted.resolve(name)
}
