package table

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
)

// None of the maintenance calls below touch table properties, so a query's
// last-committed marker (a property) survives all of them; each commit is
// applied to the catalog's current metadata and fails (and is retried from a
// fresh plan) rather than overwrite a concurrent CommitBatch.

// CompactResult reports a Compact call.
type CompactResult struct {
	Groups       int   // compaction groups rewritten
	FilesRemoved int   // small data files replaced
	FilesAdded   int   // data files written
	BytesBefore  int64 // size of the replaced files
	BytesAfter   int64 // size of the new files
	SnapshotID   int64 // the replace snapshot (0 if nothing to do)
}

// Compact rewrites small data files of ident into files of about targetBytes,
// per partition, as one "replace" snapshot (which AppendsAfter skips).
// Files already within 75%..180% of the target are left alone.
func (l *Lake) Compact(ctx context.Context, ident string, targetBytes int64) (CompactResult, error) {
	if targetBytes <= 0 {
		return CompactResult{}, fmt.Errorf("compact %s: target size %d must be positive", ident, targetBytes)
	}
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = targetBytes
	cfg.MinFileSizeBytes = targetBytes * 3 / 4
	cfg.MaxFileSizeBytes = targetBytes * 9 / 5
	cfg.MinInputFiles = 2
	return retryCommit(ctx, l, "compact "+ident, func() (CompactResult, error) {
		tbl, err := l.load(ctx, ident)
		if err != nil {
			return CompactResult{}, err
		}
		if tbl.CurrentSnapshot() == nil {
			return CompactResult{}, nil
		}
		plan, err := compaction.Analyze(ctx, tbl, cfg)
		if err != nil {
			return CompactResult{}, err
		}
		if len(plan.Groups) == 0 {
			return CompactResult{}, nil
		}
		groups := make([]icetable.CompactionTaskGroup, len(plan.Groups))
		for i, g := range plan.Groups {
			groups[i] = icetable.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}
		}
		txn := tbl.NewTransaction()
		res, err := txn.RewriteDataFiles(ctx, groups, icetable.RewriteDataFilesOptions{
			SnapshotProps: iceberg.Properties{PropPrefix + "maintenance": "compact"},
			GroupOptions:  []icetable.CompactionGroupOption{icetable.WithCompactionTargetFileSize(targetBytes)},
		})
		if err != nil {
			return CompactResult{}, err
		}
		staged, err := txn.StagedTable()
		if err != nil {
			return CompactResult{}, err
		}
		if got, want := totalRecords(staged.CurrentSnapshot()), totalRecords(tbl.CurrentSnapshot()); got != want {
			return CompactResult{}, fmt.Errorf("%w: rewrite would leave %s rows, table has %s", ErrLostWrite, got, want)
		}
		committed, err := txn.Commit(ctx)
		if err != nil {
			return CompactResult{}, err
		}
		res.Table = committed
		out := CompactResult{
			Groups: res.RewrittenGroups, FilesRemoved: res.RemovedDataFiles, FilesAdded: res.AddedDataFiles,
			BytesBefore: res.BytesBefore, BytesAfter: res.BytesAfter,
		}
		if res.Table != nil && res.Table.CurrentSnapshot() != nil {
			out.SnapshotID = res.Table.CurrentSnapshot().SnapshotID
		}
		return out, nil
	})
}

func totalRecords(s *icetable.Snapshot) string {
	if s == nil || s.Summary == nil {
		return "<none>"
	}
	return s.Summary.Properties["total-records"]
}

// ExpireSnapshots removes old snapshots of ident and the files only they
// referenced. It keeps at least the keepLast newest snapshots of main, every
// snapshot younger than olderThan, and, when protect != 0, snapshot protect
// and every snapshot after it (a downstream reader has not consumed them).
// It returns the number of snapshots removed, or ErrSnapshotNotFound if
// protect is not in main's history (expiring would be unsafe).
func (l *Lake) ExpireSnapshots(ctx context.Context, ident string, keepLast int, olderThan time.Duration,
	protect int64,
) (int, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("expire snapshots of %s: negative age %s", ident, olderThan)
	}
	return retryCommit(ctx, l, "expire snapshots of "+ident, func() (int, error) {
		tbl, err := l.load(ctx, ident)
		if err != nil {
			return 0, err
		}
		ancestry := mainAncestry(tbl)
		keep := max(keepLast, 1)
		if protect != 0 {
			idx := -1
			for i, s := range ancestry {
				if s.SnapshotID == protect {
					idx = i
					break
				}
			}
			if idx < 0 {
				return 0, fmt.Errorf("protected snapshot %d: %w", protect, ErrSnapshotNotFound)
			}
			keep = max(keep, idx+1)
		}
		before := len(tbl.Metadata().Snapshots())
		txn := tbl.NewTransaction()
		if err := txn.ExpireSnapshots(icetable.WithRetainLast(keep), icetable.WithOlderThan(olderThan)); err != nil {
			return 0, err
		}
		after, err := txn.Commit(ctx)
		if err != nil {
			return 0, err
		}
		return before - len(after.Metadata().Snapshots()), nil
	})
}

// RewriteManifests merges the current snapshot's small manifests into
// target-sized ones (metadata only; no data files are touched).
func (l *Lake) RewriteManifests(ctx context.Context, ident string) error {
	_, err := retryCommit(ctx, l, "rewrite manifests of "+ident, func() (struct{}, error) {
		tbl, err := l.load(ctx, ident)
		if err != nil {
			return struct{}{}, err
		}
		if tbl.CurrentSnapshot() == nil {
			return struct{}{}, nil
		}
		txn := tbl.NewTransaction()
		res, err := txn.RewriteManifests(ctx)
		if err != nil {
			return struct{}{}, err
		}
		if res != nil && res.IsNoOp() {
			return struct{}{}, nil
		}
		_, err = txn.Commit(ctx)
		return struct{}{}, err
	})
	return err
}

// DeleteOrphanFiles deletes files under ident's location that no retained
// snapshot or metadata file references and that are older than olderThan.
// olderThan must be at least Config.MinOrphanAge (ErrUnsafeAge otherwise):
// younger files may belong to a commit still in flight. It returns the number
// of files deleted.
func (l *Lake) DeleteOrphanFiles(ctx context.Context, ident string, olderThan time.Duration) (int, error) {
	if olderThan < l.cfg.MinOrphanAge {
		return 0, fmt.Errorf("delete orphan files of %s: %w: %s < %s", ident, ErrUnsafeAge, olderThan, l.cfg.MinOrphanAge)
	}
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return 0, err
	}
	res, err := tbl.DeleteOrphanFiles(ctx, icetable.WithFilesOlderThan(olderThan))
	if err != nil {
		return 0, fmt.Errorf("delete orphan files of %s: %w", ident, err)
	}
	return len(res.DeletedFiles), nil
}

// retryCommit runs op, re-running it from scratch after a lost race.
func retryCommit[T any](ctx context.Context, l *Lake, what string, op func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := op()
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, ErrCommitFailed) || attempt >= l.cfg.CommitRetries {
			return v, fmt.Errorf("%s: %w", what, err)
		}
		if err := sleepCtx(ctx, backoff(attempt)); err != nil {
			return v, fmt.Errorf("%s: %w", what, err)
		}
	}
}
