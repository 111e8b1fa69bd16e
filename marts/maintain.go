package marts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"lakehouse/internal/fault"
	"lakehouse/table"
)

// compactTables are compacted by JobCompact: the tables that grow by small
// appends. Gold tables are rewritten whole on every refresh and need none.
var compactTables = []string{table.Bronze, table.SilverEdits, table.EditorSessions, table.StreamProgress, table.BronzeDLQ, OpsRuns, OpsAssetChecks}

// streamedFrom are the tables a stream reads incrementally: expiring one of
// their snapshots before the downstream stream consumed it would break it.
var streamedFrom = map[string]bool{table.Bronze: true, table.SilverEdits: true}

// expireTables are expired by JobExpire, and cleaned of orphan files: the
// user's models too (each refresh that rebuilds one commits a snapshot).
func (m *Marts) expireTables() []string {
	return append(append(append([]string{}, compactTables...), GoldTables...), m.ModelTables()...)
}

// recheckFiles: a table whose file count has not changed is still looked at
// this often by the compaction check (a day partition turns cold with time).
const recheckFiles = 15 * time.Minute

// heldWarnEvery rate-limits the warning about a table whose history a
// downstream stream holds above the bound.
const heldWarnEvery = 10 * time.Minute

// filesCheck is what the compaction check last saw of a table.
type filesCheck struct {
	files int64
	at    time.Time
}

// maintain is one pass of the maintenance loop: snapshot expiry of every
// table over MaxSnapshots, then orphan cleanup where it is due. Each job
// that did something, or failed, is recorded in ops.runs; a pass with
// nothing due records nothing.
func (m *Marts) maintain(ctx context.Context) error {
	_, errExpire := m.runJob(ctx, JobExpire, &m.expireMu, m.expire)
	var errOrphans, errRetain error
	if m.cfg.OrphanEvery > 0 {
		_, errOrphans = m.runJob(ctx, JobOrphans, &m.expireMu, m.deleteOrphans)
	}
	if m.cfg.OpsRetention > 0 {
		_, errRetain = m.runJob(ctx, JobOpsRetention, &m.expireMu, m.retainOps)
	}
	return errors.Join(errExpire, errOrphans, errRetain)
}

// opsTimeColumns are the ops tables and the time column retention reads.
var opsTimeColumns = []struct{ table, column string }{
	{table.StreamProgress, "started"}, {OpsRuns, "started"}, {OpsAssetChecks, "checked_at"},
}

// opsRetentionEvery spaces the deletes of one ops table.
const opsRetentionEvery = time.Hour

// retainOps deletes, from each ops table whose last pass (stamped in the
// table, so it is due after a restart too) is an hour old, the rows older
// than OpsRetention. It returns "" when no table was due.
func (m *Marts) retainOps(ctx context.Context, _ string) (string, error) {
	cols := map[string]string{}
	var ids []string
	for _, t := range opsTimeColumns {
		cols[t.table] = t.column
		ids = append(ids, t.table)
	}
	now := time.Now()
	return m.eachDue(ctx, ids, JobOpsRetention, opsRetentionEvery, "retention", func(id string) (string, error) {
		n, err := m.lake.DeleteBefore(ctx, id, cols[id], now.Add(-m.cfg.OpsRetention))
		return fmt.Sprintf("%d rows older than %s", n, m.cfg.OpsRetention), err
	})
}

// eachDue runs do on every table of ids whose job, as stamped in the
// table, last ran every ago or never (a table that does not exist is
// skipped), stamps it when do succeeds, and returns "<table>: <do's
// detail>" joined for the tables it ran ("" when none was due) with the
// failures, each prefixed "<what> of <table>". A cancelled ctx stops it.
func (m *Marts) eachDue(ctx context.Context, ids []string, job string, every time.Duration, what string, do func(id string) (string, error)) (string, error) {
	var done []string
	var errs []error
	now := time.Now()
	for _, id := range ids {
		at, ok, err := m.lake.Maintained(ctx, id, job)
		switch {
		case isNoTable(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("%s of %s: %w", what, id, err))
			continue
		case ok && now.Sub(at) < every:
			continue
		}
		detail, err := do(id)
		if err == nil {
			err = m.lake.MarkMaintained(ctx, id, job, now)
		}
		if err != nil {
			if ctx.Err() != nil {
				return strings.Join(done, "; "), ctx.Err()
			}
			errs = append(errs, fmt.Errorf("%s of %s: %w", what, id, err))
			continue
		}
		done = append(done, id+": "+detail)
	}
	return strings.Join(done, "; "), errors.Join(errs...)
}

// compactDue is one pass of the compaction loop: compaction of every table
// whose files changed, after any refresh reading the files has finished.
func (m *Marts) compactDue(ctx context.Context) error {
	_, err := m.runJob(ctx, JobCompact, &m.mu, m.compact)
	return err
}

// compact compacts each table of compactTables whose data files changed
// since the last check (or that was last checked recheckFiles ago), by
// m.cfg.Compact. A table that does not exist yet is skipped; a failure is
// collected and the next table still runs. It returns "" when nothing was
// rewritten.
func (m *Marts) compact(ctx context.Context, _ string) (string, error) {
	var done []string
	var errs []error
	now := time.Now()
	for _, id := range compactTables {
		st, err := m.lake.Stats(ctx, id)
		switch {
		case isNoTable(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("compact %s: %w", id, err))
			continue
		}
		if seen, ok := m.filesSeen[id]; ok && seen.files == st.DataFiles && now.Sub(seen.at) < recheckFiles {
			continue
		}
		if st.DataFiles < 2 {
			m.filesSeen[id] = filesCheck{st.DataFiles, now}
			continue
		}
		res, err := m.lake.Compact(ctx, id, m.cfg.Compact)
		if err != nil {
			if ctx.Err() != nil {
				return strings.Join(done, "; "), ctx.Err()
			}
			errs = append(errs, fmt.Errorf("compact %s: %w", id, err))
			continue
		}
		m.filesSeen[id] = filesCheck{st.DataFiles - int64(res.FilesRemoved) + int64(res.FilesAdded), now}
		if res.FilesRemoved > 0 {
			fault.Hit(hookAfterCompact)
			done = append(done, fmt.Sprintf("%s: %d files (%d rows) into %d", id, res.FilesRemoved, res.RowsMoved, res.FilesAdded))
		}
	}
	return strings.Join(done, "; "), errors.Join(errs...)
}

// expire expires the snapshots of each table that holds more than
// MaxSnapshots, keeping KeepSnapshots and everything Protect reports as
// unconsumed. It returns "" when nothing was expired.
func (m *Marts) expire(ctx context.Context, _ string) (string, error) {
	var done []string
	var errs []error
	for _, id := range m.expireTables() {
		st, err := m.lake.Stats(ctx, id)
		switch {
		case isNoTable(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("expire %s: %w", id, err))
			continue
		}
		if st.Snapshots <= m.cfg.MaxSnapshots {
			continue
		}
		var protect int64
		switch {
		case m.cfg.Protect != nil:
			p, err := m.cfg.Protect(ctx, id)
			if errors.Is(err, ErrNotConsumed) {
				m.warnHeld(id, st.Snapshots, err)
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("expire %s: protected snapshot: %w", id, err))
				continue
			}
			protect = p
		case streamedFrom[id]:
			continue // no Protect hook: never guess what a stream still needs
		}
		n, err := m.lake.ExpireSnapshots(ctx, id, m.cfg.KeepSnapshots, m.cfg.MinSnapshotAge, protect)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// iceberg-go's post-commit cleanup also tries to remove files
			// that manifests of the expired snapshots list as already
			// DELETED, which an earlier expiry removed; the snapshots are
			// expired and the file is gone, which is the goal.
			m.cfg.Logger.Warn("marts: expiry cleanup found a file already removed", "table", id, "err", err)
			done = append(done, id+" expired (cleanup: file already removed)")
			continue
		case err != nil:
			if ctx.Err() != nil {
				return strings.Join(done, "; "), ctx.Err()
			}
			errs = append(errs, fmt.Errorf("expire %s: %w", id, err))
			continue
		}
		if left := st.Snapshots - n; left > m.cfg.MaxSnapshots {
			m.warnHeld(id, left, fmt.Errorf("snapshot %d and later are not consumed yet", protect))
		} else {
			delete(m.heldSince, id)
		}
		if n > 0 {
			fault.Hit(hookAfterExpire)
			done = append(done, fmt.Sprintf("%s: %d of %d", id, n, st.Snapshots))
		}
	}
	return strings.Join(done, "; "), errors.Join(errs...)
}

// warnHeld logs, at most every heldWarnEvery per table, that a downstream
// stream keeps a table's history above the bound (it is behind or stopped).
func (m *Marts) warnHeld(id string, snapshots int, why error) {
	if snapshots <= 2*m.cfg.MaxSnapshots {
		return
	}
	if at, ok := m.heldSince[id]; ok && time.Since(at) < heldWarnEvery {
		return
	}
	m.heldSince[id] = time.Now()
	m.cfg.Logger.Warn("marts: a downstream stream holds this table's snapshots above the bound",
		"table", id, "snapshots", snapshots, "max_snapshots", m.cfg.MaxSnapshots, "reason", why)
}

// orphansJob names the maintenance stamp of orphan cleanup in table
// properties.
const orphansJob = "orphans"

// deleteOrphans deletes the orphan files (older than table.DefaultMinOrphanAge:
// younger ones may belong to a commit in flight) of every table whose last
// cleanup, as stamped in the table, is OrphanEvery old or never happened.
// It returns "" when no table was due.
func (m *Marts) deleteOrphans(ctx context.Context, _ string) (string, error) {
	return m.eachDue(ctx, m.expireTables(), orphansJob, m.cfg.OrphanEvery, "orphans", func(id string) (string, error) {
		n, err := m.lake.DeleteOrphanFiles(ctx, id, table.DefaultMinOrphanAge)
		return strconv.Itoa(n), err
	})
}
