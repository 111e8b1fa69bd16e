package table

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	icetable "github.com/apache/iceberg-go/table"
)

// ErrMoved means the table got a new snapshot since the FileCheck a call
// was given: check again.
var ErrMoved = errors.New("table moved since it was checked")

// FileInfo describes a live data file of a table's current snapshot.
type FileInfo struct {
	Path string // as the metadata names it
	Rows int64
	// Lower and Upper are the bounds the manifest records for the integer
	// columns (int and long), by column name; a column without bounds is
	// absent.
	Lower, Upper map[string]int64

	df iceberg.DataFile
}

// FileCheck says which live data files of a table's current snapshot are
// missing from storage.
type FileCheck struct {
	Ident    string
	Snapshot int64 // 0: the table is empty
	Files    int   // live data files
	Rows     int64 // their rows, as the manifests count them
	Missing  []FileInfo
}

// MissingRows is the number of rows the missing files held.
func (c FileCheck) MissingRows() int64 {
	var n int64
	for _, f := range c.Missing {
		n += f.Rows
	}
	return n
}

// CheckDataFiles looks up every live data file of ident's current snapshot
// in storage (a stat each, nothing read).
func (l *Lake) CheckDataFiles(ctx context.Context, ident string) (FileCheck, error) {
	out := FileCheck{Ident: ident}
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return out, err
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return out, nil
	}
	out.Snapshot = snap.SnapshotID
	tasks, err := planFiles(ctx, ident, tbl.Scan(icetable.WithSnapshotID(snap.SnapshotID)).PlanFiles)
	if err != nil {
		return out, fmt.Errorf("check data files of %s: %w", ident, err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return out, fmt.Errorf("check data files of %s: %w", ident, err)
	}
	for _, t := range tasks {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		out.Files++
		out.Rows += t.File.Count()
		switch err := exists(fsys, t.File.FilePath()); {
		case errors.Is(err, fs.ErrNotExist):
			out.Missing = append(out.Missing, fileInfo(tbl.Schema(), t.File))
		case err != nil:
			return out, fmt.Errorf("check data files of %s: %w", ident, err)
		}
	}
	return out, nil
}

// exists stats name (or opens it when the FileIO cannot stat).
func exists(fsys iceio.IO, name string) error {
	if s, ok := fsys.(iceio.StatIO); ok {
		_, err := s.Stat(name)
		return err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	return f.Close()
}

func fileInfo(sc *iceberg.Schema, df iceberg.DataFile) FileInfo {
	fi := FileInfo{Path: df.FilePath(), Rows: df.Count(), Lower: map[string]int64{}, Upper: map[string]int64{}, df: df}
	bound := func(into map[string]int64, vals map[int][]byte) {
		for id, b := range vals {
			f, ok := sc.FindFieldByID(id)
			if !ok {
				continue
			}
			switch {
			case f.Type.Equals(iceberg.PrimitiveTypes.Int32) && len(b) == 4:
				into[f.Name] = int64(int32(binary.LittleEndian.Uint32(b)))
			case f.Type.Equals(iceberg.PrimitiveTypes.Int64) && len(b) == 8:
				into[f.Name] = int64(binary.LittleEndian.Uint64(b))
			}
		}
	}
	bound(fi.Lower, df.LowerBoundValues())
	bound(fi.Upper, df.UpperBoundValues())
	return fi
}

// ReadPresent reads columns (none: all) of every live data file of the
// checked snapshot except the missing ones. The caller releases the
// records.
func (l *Lake) ReadPresent(ctx context.Context, c FileCheck, columns ...string) ([]arrow.RecordBatch, error) {
	tbl, err := l.load(ctx, c.Ident)
	if err != nil {
		return nil, err
	}
	if c.Snapshot == 0 {
		return nil, nil
	}
	opts := []icetable.ScanOption{icetable.WithSnapshotID(c.Snapshot)}
	if len(columns) > 0 {
		opts = append(opts, icetable.WithSelectedFields(columns...))
	}
	scan := tbl.Scan(opts...)
	defer scan.Close()
	tasks, err := planFiles(ctx, c.Ident, scan.PlanFiles)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", c.Ident, err)
	}
	tasks = slices.DeleteFunc(tasks, func(t icetable.FileScanTask) bool {
		return slices.ContainsFunc(c.Missing, func(m FileInfo) bool { return m.Path == t.File.FilePath() })
	})
	recs, err := readTasks(ctx, scan, tasks)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", c.Ident, err)
	}
	return recs, nil
}

// ReplaceMissing commits, in one snapshot, the removal of c's missing
// files from the table and the rows recs (in the table's schema) that
// replace them: a "replace" snapshot, as compaction makes, so incremental
// readers (they read appends) do not read the rows again. recs must hold
// exactly as many rows as the missing files did; the table must still be at
// c's snapshot (ErrMoved otherwise). It takes ownership of recs. The
// snapshot summary says lakehouse.maintenance=reland.
func (l *Lake) ReplaceMissing(ctx context.Context, c FileCheck, recs []arrow.RecordBatch) (int64, error) {
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if len(c.Missing) == 0 {
		return 0, fmt.Errorf("replace missing files of %s: none missing", c.Ident)
	}
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	if want := c.MissingRows(); rows != want {
		return 0, fmt.Errorf("replace missing files of %s: %d rows given for the %d the missing files held", c.Ident, rows, want)
	}
	unlock := l.lockTable(c.Ident)
	defer unlock()
	tbl, err := l.load(ctx, c.Ident)
	if err != nil {
		return 0, err
	}
	if cur := tbl.CurrentSnapshot(); cur == nil || cur.SnapshotID != c.Snapshot {
		return 0, fmt.Errorf("replace missing files of %s: %w (checked at snapshot %d)", c.Ident, ErrMoved, c.Snapshot)
	}
	conformed, _, err := conform(tbl, recs)
	if err != nil {
		return 0, fmt.Errorf("replace missing files of %s: %w", c.Ident, err)
	}
	files, err := writeDataFiles(ctx, tbl, conformed, rows)
	if err != nil {
		return 0, fmt.Errorf("replace missing files of %s: write: %w", c.Ident, err)
	}
	txn := tbl.NewTransaction()
	if err := txn.AssertRefSnapshotID(icetable.MainBranch); err != nil {
		removeDataFiles(ctx, tbl, files)
		return 0, fmt.Errorf("replace missing files of %s: %w", c.Ident, err)
	}
	rw := txn.NewRewrite(iceberg.Properties{PropPrefix + "maintenance": "reland"})
	for _, m := range c.Missing {
		rw.DeleteFile(m.df)
	}
	for _, f := range files {
		rw.AddDataFile(f)
	}
	if err := rw.Commit(ctx); err != nil {
		removeDataFiles(ctx, tbl, files)
		return 0, fmt.Errorf("replace missing files of %s: stage: %w", c.Ident, err)
	}
	committed, err := txn.Commit(ctx)
	if err != nil {
		if errors.Is(err, ErrCommitFailed) {
			removeDataFiles(ctx, tbl, files)
		}
		return 0, fmt.Errorf("replace missing files of %s: commit: %w", c.Ident, err)
	}
	l.notifyCommit(c.Ident)
	return committed.CurrentSnapshot().SnapshotID, nil
}
