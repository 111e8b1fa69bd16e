package table

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
)

// Overwrite replaces all rows of ident with recs in one snapshot (a full
// rewrite with no row filter, so rows with NULLs are never silently
// dropped). It is meant for derived tables such as gold marts. A missing
// table (and namespace) is created, unpartitioned, from schema with fresh
// field ids; if the table exists with a different schema it is dropped and
// created again, which readers may observe as a short gap. The records must
// match schema; the caller keeps ownership of recs. Overwrite pins main: a
// concurrent commit makes it re-plan (up to Config.CommitRetries times)
// rather than keep files it did not see.
func (l *Lake) Overwrite(ctx context.Context, ident string, schema *arrow.Schema, recs []arrow.RecordBatch) error {
	id, err := parseIdent(ident)
	if err != nil {
		return err
	}
	for i, r := range recs {
		if r == nil || !sameColumns(r.Schema(), schema) {
			return fmt.Errorf("overwrite %s: record %d: %w", ident, i, ErrSchemaMismatch)
		}
	}
	sc, err := icetable.ArrowSchemaToIcebergWithFreshIDs(schema, false)
	if err != nil {
		return fmt.Errorf("overwrite %s: %w: %w", ident, ErrSchemaMismatch, err)
	}
	tbl, err := l.tableForOverwrite(ctx, id, ident, sc)
	if err != nil {
		return err
	}
	conformed, rows, err := conform(tbl, recs)
	if err != nil {
		return fmt.Errorf("overwrite %s: %w", ident, err)
	}
	added, err := writeDataFiles(ctx, tbl, conformed, rows)
	if err != nil {
		return fmt.Errorf("overwrite %s: write data files: %w", ident, err)
	}
	props := iceberg.Properties{PropPrefix + "operation": "overwrite"}
	unlock := l.lockTable(ident)
	defer unlock()
	for attempt := 0; ; attempt++ {
		if tbl, err = l.loadID(ctx, id); err != nil {
			return fmt.Errorf("overwrite %s: reload: %w", ident, err)
		}
		err := replaceAll(ctx, tbl, added, props)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrCommitFailed) || attempt >= l.cfg.CommitRetries {
			if errors.Is(err, ErrCommitFailed) {
				removeDataFiles(ctx, tbl, added)
			}
			return fmt.Errorf("overwrite %s: %w", ident, err)
		}
		if err := sleepCtx(ctx, backoff(attempt)); err != nil {
			removeDataFiles(ctx, tbl, added)
			return fmt.Errorf("overwrite %s: %w", ident, err)
		}
	}
}

// replaceAll commits one snapshot of tbl that removes every live data file
// and adds added, pinned to tbl's main head.
func replaceAll(ctx context.Context, tbl *icetable.Table, added []iceberg.DataFile, props iceberg.Properties) error {
	var live []iceberg.DataFile
	if tbl.CurrentSnapshot() != nil {
		tasks, err := planFiles(ctx, strings.Join(tbl.Identifier(), "."), tbl.Scan().PlanFiles)
		if err != nil {
			return fmt.Errorf("live files: %w", err)
		}
		for _, t := range tasks {
			live = append(live, t.File)
		}
	}
	if len(live) == 0 && len(added) == 0 {
		return nil
	}
	txn := tbl.NewTransaction()
	if err := txn.AssertRefSnapshotID(icetable.MainBranch); err != nil {
		return err
	}
	if err := txn.ReplaceDataFilesWithDataFiles(ctx, live, added, props); err != nil {
		return fmt.Errorf("stage overwrite: %w", err)
	}
	_, err := txn.Commit(ctx)
	return err
}

// sameColumns compares names, types and order, ignoring field metadata and
// nullability flags.
func sameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.Fields() {
		if a.Field(i).Name != b.Field(i).Name || !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}

func (l *Lake) tableForOverwrite(ctx context.Context, id icetable.Identifier, ident string, sc *iceberg.Schema) (*icetable.Table, error) {
	tbl, err := l.loadID(ctx, id)
	if err == nil {
		if st, want := tbl.Schema().AsStruct(), sc.AsStruct(); st.Equals(&want) {
			return tbl, nil
		}
		if err := l.cat.DropTable(ctx, id); err != nil && !errors.Is(err, icecat.ErrNoSuchTable) {
			return nil, fmt.Errorf("overwrite %s: drop for schema change: %w", ident, err)
		}
	} else if !errors.Is(err, icecat.ErrNoSuchTable) {
		return nil, fmt.Errorf("overwrite %s: %w", ident, err)
	}
	if err := l.ensureTable(ctx, ident, sc, iceberg.UnpartitionedSpec, nil); err != nil {
		return nil, fmt.Errorf("overwrite %s: %w", ident, err)
	}
	tbl, err = l.loadID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("overwrite %s: %w", ident, err)
	}
	return tbl, nil
}
