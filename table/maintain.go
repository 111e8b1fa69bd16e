package table

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
)

// None of the maintenance calls below touch a query's last-committed marker
// (a table property; MarkMaintained sets only its own key), so it survives
// all of them; each commit is
// applied to the catalog's current metadata and fails (and is retried from a
// fresh plan) rather than overwrite a concurrent CommitBatch.

// ExpireSnapshots removes old snapshots of ident and the files only they
// referenced. It keeps at least the keepLast newest snapshots of main, every
// snapshot younger than olderThan, every leased snapshot and every one
// after it (a reader is reading it: Lease), and, when protect != 0,
// snapshot protect and every snapshot after it (a downstream reader has
// not consumed them).
// It returns the number of snapshots removed, or ErrSnapshotNotFound if
// protect is not in main's history (expiring would be unsafe).
func (l *Lake) ExpireSnapshots(ctx context.Context, ident string, keepLast int, olderThan time.Duration,
	protect int64,
) (int, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("expire snapshots of %s: negative age %s", ident, olderThan)
	}
	return retryCommit(ctx, l, ident, "expire snapshots of "+ident, func() (int, error) {
		tbl, err := l.load(ctx, ident)
		if err != nil {
			return 0, err
		}
		ancestry := mainAncestry(tbl)
		keep := max(keepLast, 1, l.leasedFrom(ident, ancestry))
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
	_, err := retryCommit(ctx, l, ident, "rewrite manifests of "+ident, func() (struct{}, error) {
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

// retryCommit runs op holding ident's commit lock (see lockTable),
// re-running it from scratch after a lost race (with another process).
func retryCommit[T any](ctx context.Context, l *Lake, ident, what string, op func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		unlock := l.lockTable(ident)
		v, err := op()
		unlock()
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

// maintainedKey is the table property recording when job last ran on a
// table, so that a schedule survives restarts.
func maintainedKey(job string) string { return PropPrefix + "maintenance." + job + "-at" }

// Maintained returns when job (a name of the caller's) last ran on ident,
// as recorded by MarkMaintained; ok is false if never.
func (l *Lake) Maintained(ctx context.Context, ident, job string) (time.Time, bool, error) {
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return time.Time{}, false, err
	}
	raw, ok := tbl.Properties()[maintainedKey(job)]
	if !ok {
		return time.Time{}, false, nil
	}
	at, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("maintenance stamp %s of %s: %w", job, ident, err)
	}
	return at, true, nil
}

// Properties returns ident's table properties.
func (l *Lake) Properties(ctx context.Context, ident string) (map[string]string, error) {
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return nil, err
	}
	return tbl.Properties(), nil
}

// MarkMaintained records in ident's properties that job ran at at (a
// metadata-only commit, retried after a lost race).
func (l *Lake) MarkMaintained(ctx context.Context, ident, job string, at time.Time) error {
	_, err := retryCommit(ctx, l, ident, "mark "+job+" of "+ident, func() (struct{}, error) {
		tbl, err := l.load(ctx, ident)
		if err != nil {
			return struct{}{}, err
		}
		txn := tbl.NewTransaction()
		if err := txn.SetProperties(iceberg.Properties{maintainedKey(job): at.UTC().Format(time.RFC3339Nano)}); err != nil {
			return struct{}{}, err
		}
		_, err = txn.Commit(ctx)
		return struct{}{}, err
	})
	return err
}

// DeleteBefore deletes the rows of ident whose timestamp column is before
// cutoff, in one delete snapshot (files wholly older are dropped, files
// that straddle the cutoff rewritten), and returns how many rows it
// deleted. For tables nobody reads incrementally (the ops tables): a
// delete snapshot is not an append, so a stream would not see it.
func (l *Lake) DeleteBefore(ctx context.Context, ident, column string, cutoff time.Time) (int64, error) {
	return retryCommit(ctx, l, ident, "delete old rows of "+ident, func() (int64, error) {
		tbl, err := l.load(ctx, ident)
		if err != nil {
			return 0, err
		}
		if tbl.CurrentSnapshot() == nil {
			return 0, nil
		}
		before := tbl.CurrentSnapshot().SnapshotID
		txn := tbl.NewTransaction()
		if err := txn.AssertRefSnapshotID(icetable.MainBranch); err != nil {
			return 0, err
		}
		filter := iceberg.LessThan(iceberg.Reference(column), iceberg.Timestamp(cutoff.UnixMicro()))
		if err := txn.Delete(ctx, filter, iceberg.Properties{PropPrefix + "maintenance": "retention"}); err != nil {
			return 0, fmt.Errorf("delete rows of %s before %s: %w", ident, cutoff.Format(time.RFC3339), err)
		}
		committed, err := txn.Commit(ctx)
		if err != nil {
			return 0, err
		}
		s := committed.CurrentSnapshot()
		if s == nil || s.SnapshotID == before || s.Summary == nil {
			return 0, nil
		}
		l.notifyCommit(ident)
		// A rewritten file counts as deleted whole, its survivors as added.
		p := s.Summary.Properties
		return int64(p.GetInt("deleted-records", 0) - p.GetInt("added-records", 0)), nil
	})
}
