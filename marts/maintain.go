package marts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"lakehouse/internal/fault"
	"lakehouse/table"
)

// compactTables are compacted by JobCompact: the tables that grow by small
// appends. Gold tables are rewritten whole on every refresh and need none.
var compactTables = []string{table.Bronze, table.SilverEdits, table.EditorSessions, table.StreamProgress, OpsRuns, OpsAssetChecks}

// streamedFrom are the tables a stream reads incrementally: expiring one of
// their snapshots before the downstream stream consumed it would break it.
var streamedFrom = map[string]bool{table.Bronze: true, table.SilverEdits: true}

// expireTables are expired by JobExpire.
func expireTables() []string { return append(append([]string{}, compactTables...), GoldTables...) }

// compact compacts each table in compactTables. A table that does not exist
// yet is skipped; a failure is collected and the next table still runs.
func (m *Marts) compact(ctx context.Context) (string, error) {
	var done []string
	var errs []error
	for _, id := range compactTables {
		res, err := m.lake.Compact(ctx, id, m.cfg.CompactTargetBytes)
		switch {
		case isNoTable(err):
			continue
		case err != nil:
			if ctx.Err() != nil {
				return strings.Join(done, "; "), ctx.Err()
			}
			errs = append(errs, fmt.Errorf("compact %s: %w", id, err))
			continue
		}
		if res.FilesRemoved > 0 {
			fault.Hit(hookAfterCompact)
		}
		done = append(done, fmt.Sprintf("%s %+v", id, res))
	}
	return strings.Join(done, "; "), errors.Join(errs...)
}

// expire expires old snapshots of each table, keeping KeepSnapshots and
// everything Protect reports as unconsumed.
func (m *Marts) expire(ctx context.Context) (string, error) {
	var done []string
	var errs []error
	for _, id := range expireTables() {
		var protect int64
		switch {
		case m.cfg.Protect != nil:
			p, err := m.cfg.Protect(ctx, id)
			if err != nil {
				errs = append(errs, fmt.Errorf("expire %s: protected snapshot: %w", id, err))
				continue
			}
			protect = p
		case streamedFrom[id]:
			done = append(done, id+" skipped (no Protect hook)")
			continue
		}
		n, err := m.lake.ExpireSnapshots(ctx, id, m.cfg.KeepSnapshots, m.cfg.ExpireOlderThan, protect)
		switch {
		case isNoTable(err):
			continue
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
		if n > 0 {
			fault.Hit(hookAfterExpire)
		}
		done = append(done, fmt.Sprintf("%s expired %d", id, n))
	}
	return strings.Join(done, "; "), errors.Join(errs...)
}
