package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/internal/fault"
)

// Fault hooks (see internal/fault).
var (
	hookAfterDataFiles = fault.Register("table.after-data-files",
		"data files written, before the catalog commit")
	hookAfterCommit = fault.Register("table.after-commit",
		"catalog pointer swapped, before CommitBatch returns")
)

// Snapshot-summary and property keys. Every key of ours carries the
// "lakehouse." prefix so it can never overwrite a reserved Iceberg key.
const (
	PropPrefix = "lakehouse."
	// SummaryQuery is the committing query's name (Batch.Query), the stable
	// identity that keys its marker. The key says "query-id", as lakes
	// written since the first version have it; the run's query
	// id, which changes when a checkpoint is lost, is a separate property
	// the stream package adds (lakehouse.stream.query-id).
	SummaryQuery   = "lakehouse.query-id"
	SummaryBatchID = "lakehouse.batch-id"
	SummaryOffsets = "lakehouse.offsets"
	// SummaryAddedBytes is the in-memory (Arrow) size of the rows a
	// CommitBatch snapshot added: what reading them back costs, which the
	// compressed added-files-size can understate a hundredfold (see
	// Snapshot.AddedBytes).
	SummaryAddedBytes = "lakehouse.added-bytes"
	markerPropPrefix  = "lakehouse.marker."
)

// Batch is one micro-batch of a streaming query, committed exactly once.
type Batch struct {
	Query   string              // query name: keys the marker, summary lakehouse.query-id (SummaryQuery)
	RunID   string              // the run's query id (opaque; changes when a checkpoint is lost), kept in the marker; may be empty
	ID      int64               // batch id; ids of one query increase
	Offsets string              // source offsets, opaque string
	Records []arrow.RecordBatch // may be empty: an empty batch commits its marker only (no snapshot); not released by CommitBatch
	Props   map[string]string   // extra summary properties (keys get the "lakehouse." prefix), also kept in the marker
	// TableProps are table properties set in the same commit (keys with the
	// "lakehouse." prefix, not a marker's, else ErrBadProperty): state
	// that must change exactly when the batch lands.
	TableProps map[string]string
	// Fenced makes the commit one writer's: it commits only if the
	// query's marker is batch ID-1 ending at Follows (or there is none),
	// and it counts as done only if the table's batch ID ends where this
	// one does. Anything else is ErrFenced: a second process committing the
	// same query (a zombie) can never interleave its batches with the
	// first's, whatever their ranges.
	Fenced  bool
	Follows string // the offsets of the query's batch ID-1, where this one starts
}

// Result reports a CommitBatch.
type Result struct {
	Committed  bool  // false: already committed earlier, nothing written now
	SnapshotID int64 // the snapshot that carries this batch (0 for an empty batch, or if expired since)
	DataFiles  int
	Rows       int64
}

// Marker is a query's last committed batch, kept as a table property so it
// survives snapshot expiry and compaction. SnapshotID is the snapshot that
// committed the batch, or 0 when the batch was empty (it committed the
// marker only) or that snapshot has been expired. Props are the batch's
// summary properties with their "lakehouse." prefix (nil for markers
// written before they were kept).
type Marker struct {
	Query      string
	RunID      string
	Batch      int64
	Offsets    string
	SnapshotID int64
	Props      map[string]string
}

type markerValue struct {
	Batch   int64             `json:"batch"`
	Offsets string            `json:"offsets"`
	RunID   string            `json:"run_id,omitempty"`
	Props   map[string]string `json:"props,omitempty"`
}

func markerKey(query string) string { return markerPropPrefix + query }

func readMarker(tbl *icetable.Table, query string) (Marker, bool, error) {
	raw, ok := tbl.Properties()[markerKey(query)]
	if !ok {
		return Marker{}, false, nil
	}
	var v markerValue
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return Marker{}, false, fmt.Errorf("decode marker of query %q: %w", query, err)
	}
	return Marker{Query: query, RunID: v.RunID, Batch: v.Batch, Offsets: v.Offsets, Props: v.Props}, true, nil
}

// LastCommitted returns the last batch id and offsets committed to ident by
// query, read from a freshly loaded table; ok is false if the query never
// committed.
func (l *Lake) LastCommitted(ctx context.Context, ident, query string) (Marker, bool, error) {
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return Marker{}, false, err
	}
	m, ok, err := readMarker(tbl, query)
	if ok && err == nil {
		m.SnapshotID = batchSnapshot(tbl, query, m.Batch)
	}
	return m, ok, err
}

// CommitBatch appends b.Records to ident as one snapshot for (b.Query, b.ID),
// exactly once:
//
//   - it reloads the table (no cached metadata) and returns Committed=false,
//     writing nothing, if the query's marker already has a batch id >= b.ID;
//   - it writes the data files, then commits one append snapshot whose
//     summary carries the query id, batch id, offsets and b.Props, together
//     with the marker table property, in one catalog transaction pinned with
//     AssertRefSnapshotID("main"), so a concurrent commit makes it fail
//     instead of being replayed;
//   - a batch without rows commits the marker property alone (pinned the
//     same way): no snapshot, so a query whose batches are mostly empty (a
//     sessions query between closes) does not grow the table's history;
//   - the commit holds the table's commit lock of this Lake (stream batches
//     and maintenance never race each other in one process) and reloads the
//     table under it; after a lost race (another process) it reloads and
//     re-checks the marker: if a zombie or replay committed this batch
//     meanwhile, it deletes its own data files and returns Committed=false;
//     otherwise it retries with the same files.
//
// Errors: ErrSchemaMismatch (nothing written), ErrNoSuchTable, ErrInvalidBatch,
// ErrCommitFailed after Config.CommitRetries lost races (nothing committed).
// Any other error after the data files were written may leave the commit's
// outcome unknown (for example an I/O error from the catalog); callers retry
// the same batch, which the marker check makes safe.
func (l *Lake) CommitBatch(ctx context.Context, ident string, b Batch) (Result, error) {
	if b.Query == "" || b.ID < 0 {
		return Result{}, fmt.Errorf("commit batch to %s: %w: query %q id %d", ident, ErrInvalidBatch, b.Query, b.ID)
	}
	if err := ourProperties(b.TableProps); err != nil {
		return Result{}, fmt.Errorf("commit batch %s/%d to %s: %w", b.Query, b.ID, ident, err)
	}
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return Result{}, fmt.Errorf("commit batch: %w", err)
	}
	if done, err := holdsBatch(tbl, ident, b); err != nil {
		return Result{}, err
	} else if done {
		return Result{Committed: false, SnapshotID: batchSnapshot(tbl, b.Query, b.ID)}, nil
	}

	added := recordBytes(b.Records) // before writeDataFiles consumes the records
	recs, rows, err := conform(tbl, b.Records)
	if err != nil {
		return Result{}, fmt.Errorf("commit batch %s/%d to %s: %w", b.Query, b.ID, ident, err)
	}
	// The rows committed are kept for TakeAppended (the downstream query
	// in this process); released here unless the commit hands them over.
	kept, schemaID := retainAll(recs), tbl.Schema().ID
	defer func() { releaseAll(kept) }()
	files, err := writeDataFiles(ctx, tbl, recs, rows)
	if err != nil {
		return Result{}, fmt.Errorf("commit batch %s/%d to %s: write data files: %w", b.Query, b.ID, ident, err)
	}
	fault.Hit(hookAfterDataFiles)

	summary := summaryProps(b)
	summary[SummaryAddedBytes] = strconv.FormatInt(added, 10)
	unlock := l.lockTable(ident)
	defer unlock()
	for attempt := 0; ; attempt++ {
		if attempt > 1 { // the first retry goes at once: the winner is done
			if err := sleepCtx(ctx, backoff(attempt-2)); err != nil {
				removeDataFiles(ctx, tbl, files)
				return Result{}, fmt.Errorf("commit batch %s/%d to %s: %w", b.Query, b.ID, ident, err)
			}
		}
		// Reload under the lock: maintenance may have committed while the
		// files were written, and a zombie or replay may have committed
		// this batch (then the files are no one's).
		if tbl, err = l.load(ctx, ident); err != nil {
			return Result{}, fmt.Errorf("commit batch: reload: %w", err)
		}
		if done, err := holdsBatch(tbl, ident, b); err != nil || done {
			removeDataFiles(ctx, tbl, files)
			if err != nil {
				return Result{}, err
			}
			return Result{Committed: false, SnapshotID: batchSnapshot(tbl, b.Query, b.ID)}, nil
		}
		snapID, err := commitFiles(ctx, tbl, b, files, summary)
		if err == nil {
			if snapID != 0 {
				l.recent.put(ident, snapID, schemaID, kept, added)
				kept = nil
			}
			l.notifyCommit(ident)
			fault.Hit(hookAfterCommit)
			return Result{Committed: true, SnapshotID: snapID, DataFiles: len(files), Rows: rows}, nil
		}
		if !errors.Is(err, ErrCommitFailed) {
			return Result{}, fmt.Errorf("commit batch %s/%d to %s: %w", b.Query, b.ID, ident, err)
		}
		if attempt >= l.cfg.CommitRetries {
			removeDataFiles(ctx, tbl, files)
			return Result{}, fmt.Errorf("commit batch %s/%d to %s: %d lost races: %w", b.Query, b.ID, ident, attempt+1, err)
		}
	}
}

// holdsBatch reports whether tbl already holds batch b (or a later batch)
// of b.Query. For a fenced batch it returns ErrFenced when the table's
// batch b.ID ends elsewhere (when its snapshot is still there to tell), or
// when the marker is not batch b.ID-1 ending at b.Follows.
func holdsBatch(tbl *icetable.Table, ident string, b Batch) (bool, error) {
	m, ok, err := readMarker(tbl, b.Query)
	if err != nil {
		return false, fmt.Errorf("commit batch to %s: %w", ident, err)
	}
	if ok && m.Batch >= b.ID {
		if b.Fenced {
			if end, known := batchEnd(tbl, m, b.ID); known && end != b.Offsets {
				return false, fmt.Errorf("commit %s batch %d to %s: the table's batch %d ends at %s, this one at %s: %w",
					b.Query, b.ID, ident, b.ID, end, b.Offsets, ErrFenced)
			}
		}
		return true, nil
	}
	if b.Fenced && ok && (m.Batch != b.ID-1 || m.Offsets != b.Follows) {
		return false, fmt.Errorf("commit %s batch %d to %s: it follows batch %d at %s, but the table's last is batch %d at %s: %w",
			b.Query, b.ID, ident, b.ID-1, b.Follows, m.Batch, m.Offsets, ErrFenced)
	}
	return false, nil
}

// batchEnd returns the end offsets of batch id of m's query: the marker's
// own, or those in the summary of the snapshot that committed it (not
// known once that snapshot expired, or for an empty batch).
func batchEnd(tbl *icetable.Table, m Marker, id int64) (string, bool) {
	if m.Batch == id {
		return m.Offsets, true
	}
	if s := batchCommit(tbl, m.Query, id); s != nil {
		return s.Summary.Properties[SummaryOffsets], true
	}
	return "", false
}

// commitFiles stages one append snapshot of files plus the marker property on
// tbl and commits it pinned to tbl's main head. It returns the new snapshot.
func commitFiles(ctx context.Context, tbl *icetable.Table, b Batch, files []iceberg.DataFile,
	summary iceberg.Properties,
) (int64, error) {
	txn := tbl.NewTransaction()
	if err := txn.AssertRefSnapshotID(icetable.MainBranch); err != nil {
		return 0, fmt.Errorf("pin main: %w", err)
	}
	if len(files) > 0 {
		if err := txn.AddDataFiles(ctx, files, summary, icetable.WithoutDuplicateCheck()); err != nil {
			return 0, fmt.Errorf("stage append: %w", err)
		}
	}
	mv, err := json.Marshal(markerValue{Batch: b.ID, Offsets: b.Offsets, RunID: b.RunID, Props: markerProps(summary)})
	if err != nil {
		return 0, fmt.Errorf("encode marker: %w", err)
	}
	props := iceberg.Properties{markerKey(b.Query): string(mv)}
	for k, v := range b.TableProps {
		props[k] = v
	}
	if err := txn.SetProperties(props); err != nil {
		return 0, fmt.Errorf("stage marker: %w", err)
	}
	committed, err := txn.Commit(ctx)
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		return 0, nil // marker only
	}
	// The commit was pinned to the old head, so main's new head is ours.
	head := committed.Metadata().SnapshotByName(icetable.MainBranch)
	if head == nil {
		return 0, errors.New("commit: main has no head after an append")
	}
	return head.SnapshotID, nil
}

// batchSnapshot finds the snapshot that committed (query, batch) on main, or
// 0 if it has been expired.
func batchSnapshot(tbl *icetable.Table, query string, batch int64) int64 {
	if s := batchCommit(tbl, query, batch); s != nil {
		return s.SnapshotID
	}
	return 0
}

// batchCommit is the snapshot on main that committed (query, batch), or
// nil if it has been expired (or the batch was empty).
func batchCommit(tbl *icetable.Table, query string, batch int64) *icetable.Snapshot {
	id := strconv.FormatInt(batch, 10)
	for _, s := range mainAncestry(tbl) {
		if s.Summary != nil && s.Summary.Properties[SummaryQuery] == query && s.Summary.Properties[SummaryBatchID] == id {
			return &s
		}
	}
	return nil
}

// markerProps are the batch's own summary properties (b.Props, prefixed),
// without the keys the marker holds itself.
func markerProps(summary iceberg.Properties) map[string]string {
	out := make(map[string]string, len(summary))
	for k, v := range summary {
		switch k {
		case SummaryQuery, SummaryBatchID, SummaryOffsets, SummaryAddedBytes:
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func summaryProps(b Batch) iceberg.Properties {
	p := iceberg.Properties{
		SummaryQuery:   b.Query,
		SummaryBatchID: strconv.FormatInt(b.ID, 10),
		SummaryOffsets: b.Offsets,
	}
	reserved := func(k string) bool { _, ok := p[k]; return ok || k == SummaryAddedBytes }
	for k, v := range b.Props {
		if !strings.HasPrefix(k, PropPrefix) {
			k = PropPrefix + k
		}
		if reserved(k) {
			continue
		}
		p[k] = v
	}
	return p
}

// recordBytes is the size of the buffers behind recs (a buffer shared by
// two columns counted twice: an upper bound).
func recordBytes(recs []arrow.RecordBatch) int64 {
	var n int64
	for _, r := range recs {
		for _, c := range r.Columns() {
			n += dataBytes(c.Data())
		}
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		n += dataBytes(dict)
	}
	return n
}

// conform checks every record against the table schema and rebinds it to the
// table's Arrow schema (with field ids). The returned records are new
// references the caller must not release (writeDataFiles consumes them).
func conform(tbl *icetable.Table, recs []arrow.RecordBatch) ([]arrow.RecordBatch, int64, error) {
	want, err := icetable.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, 0, fmt.Errorf("table arrow schema: %w", err)
	}
	var rows int64
	out := make([]arrow.RecordBatch, 0, len(recs))
	release := func() {
		for _, r := range out {
			r.Release()
		}
	}
	for i, r := range recs {
		if r == nil {
			release()
			return nil, 0, fmt.Errorf("record %d: %w: nil record", i, ErrSchemaMismatch)
		}
		if err := matchSchema(want, r); err != nil {
			release()
			return nil, 0, fmt.Errorf("record %d: %w", i, err)
		}
		if r.NumRows() == 0 {
			continue
		}
		rows += r.NumRows()
		out = append(out, array.NewRecordBatch(want, r.Columns(), r.NumRows()))
	}
	return out, rows, nil
}

func matchSchema(want *arrow.Schema, r arrow.RecordBatch) error {
	got := r.Schema()
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("%w: got %d columns, want %d (%s)", ErrSchemaMismatch, got.NumFields(), want.NumFields(), fieldNames(want))
	}
	for i, wf := range want.Fields() {
		gf := got.Field(i)
		if gf.Name != wf.Name {
			return fmt.Errorf("%w: column %d: got name %q, want %q", ErrSchemaMismatch, i, gf.Name, wf.Name)
		}
		if !arrow.TypeEqual(gf.Type, wf.Type) {
			return fmt.Errorf("%w: column %q: got type %s, want %s", ErrSchemaMismatch, wf.Name, gf.Type, wf.Type)
		}
		if !wf.Nullable && r.Column(i).NullN() > 0 {
			return fmt.Errorf("%w: column %q is required but has %d nulls", ErrSchemaMismatch, wf.Name, r.Column(i).NullN())
		}
	}
	return nil
}

func fieldNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ",")
}

// writeDataFiles writes recs (consuming them) as Parquet data files of tbl
// and checks that the files hold exactly rows rows. On error it removes the
// files it wrote.
func writeDataFiles(ctx context.Context, tbl *icetable.Table, recs []arrow.RecordBatch, rows int64) ([]iceberg.DataFile, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	sc := recs[0].Schema()
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for i, r := range recs {
			if !yield(r, nil) {
				for _, rest := range recs[i+1:] {
					rest.Release()
				}
				return
			}
		}
	}
	var files []iceberg.DataFile
	for df, err := range icetable.WriteRecords(ctx, tbl, sc, iter.Seq2[arrow.RecordBatch, error](seq)) {
		if err != nil {
			removeDataFiles(ctx, tbl, files)
			return nil, err
		}
		files = append(files, df)
	}
	var got int64
	for _, f := range files {
		got += f.Count()
	}
	if got != rows {
		removeDataFiles(ctx, tbl, files)
		return nil, lostWrite(ctx, tbl, fmt.Sprintf("wrote %d of %d rows in %d files", got, rows, len(files)))
	}
	return files, nil
}

// lostWrite is ErrLostWrite with what happened, and, on local disk, the
// lake's newest failed file write, which is most likely the error the
// writer dropped (wrapped, so errors.Is sees it).
func lostWrite(ctx context.Context, tbl *icetable.Table, what string) error {
	if fsys, err := tbl.FS(ctx); err == nil {
		if r, ok := fsys.(*rootedFS); ok {
			if last := r.lastWriteError(); last != nil {
				return fmt.Errorf("%w: %s (the last failed file write: %w)", ErrLostWrite, what, last)
			}
		}
	}
	return fmt.Errorf("%w: %s", ErrLostWrite, what)
}

// removeDataFiles deletes data files that no commit references (best effort:
// DeleteOrphanFiles catches anything left).
func removeDataFiles(ctx context.Context, tbl *icetable.Table, files []iceberg.DataFile) {
	if len(files) == 0 {
		return
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return
	}
	for _, f := range files {
		_ = fsys.Remove(f.FilePath())
	}
}

func backoff(attempt int) time.Duration {
	d := time.Duration(5<<min(attempt, 6)) * time.Millisecond
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
