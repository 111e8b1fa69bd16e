package table

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
)

// Overwrite replaces all rows of ident with recs in one snapshot (a full
// rewrite with no row filter, so rows with NULLs are never silently
// dropped), and sets props (keys with the "lakehouse." prefix, else
// ErrBadProperty) as table properties in the same commit, with a digest of
// the data files it leaves live: a reader then knows whether the table
// still holds what that Overwrite wrote (Files.Overwritten), so what props
// say of the rows (a derived table's record of what it was built from) is
// never trusted once another writer changed them. It is meant for derived
// tables such as gold marts. A missing
// table (and namespace) is created, unpartitioned, from schema with fresh
// field ids; if the table exists with a different schema it is dropped and
// created again, which readers may observe as a short gap. The records must
// match schema; the caller keeps ownership of recs. Overwrite pins main: a
// concurrent commit makes it re-plan (up to Config.CommitRetries times)
// rather than keep files it did not see.
func (l *Lake) Overwrite(ctx context.Context, ident string, schema *arrow.Schema, recs []arrow.RecordBatch, props map[string]string) error {
	id, err := parseIdent(ident)
	if err != nil {
		return err
	}
	if err := ourProperties(props); err != nil {
		return fmt.Errorf("overwrite %s: %w", ident, err)
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
	summary := iceberg.Properties{PropPrefix + "operation": "overwrite"}
	set := map[string]string{propOverwritten: filesDigest(added), propOverwriteKeys: strings.Join(slices.Sorted(maps.Keys(props)), ",")}
	for k, v := range props {
		set[k] = v
	}
	unlock := l.lockTable(ident)
	defer unlock()
	for attempt := 0; ; attempt++ {
		if tbl, err = l.loadID(ctx, id); err != nil {
			return fmt.Errorf("overwrite %s: reload: %w", ident, err)
		}
		err := replaceAll(ctx, tbl, added, summary, set)
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
// and adds added, and sets props, removing the properties the previous
// Overwrite set that props lacks (propOverwriteKeys): they described rows
// that are gone. Pinned to tbl's main head. With no file to remove or add
// it commits the properties alone (when they change).
func replaceAll(ctx context.Context, tbl *icetable.Table, added []iceberg.DataFile, summary iceberg.Properties, props map[string]string) error {
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
	var stale []string
	if prev := tbl.Properties()[propOverwriteKeys]; prev != "" {
		for _, k := range strings.Split(prev, ",") {
			if _, keep := props[k]; !keep && strings.HasPrefix(k, PropPrefix) {
				if _, ok := tbl.Properties()[k]; ok {
					stale = append(stale, k)
				}
			}
		}
	}
	changed := len(stale) > 0
	for k, v := range props {
		if old, ok := tbl.Properties()[k]; !ok || old != v {
			changed = true
		}
	}
	if len(live) == 0 && len(added) == 0 && !changed {
		return nil
	}
	txn := tbl.NewTransaction()
	if err := txn.AssertRefSnapshotID(icetable.MainBranch); err != nil {
		return err
	}
	if len(live) > 0 || len(added) > 0 {
		if err := txn.ReplaceDataFilesWithDataFiles(ctx, live, added, summary); err != nil {
			return fmt.Errorf("stage overwrite: %w", err)
		}
	}
	if changed {
		if err := txn.SetProperties(props); err != nil {
			return fmt.Errorf("stage properties: %w", err)
		}
		if len(stale) > 0 {
			if err := txn.RemoveProperties(stale); err != nil {
				return fmt.Errorf("stage properties: %w", err)
			}
		}
	}
	_, err := txn.Commit(ctx)
	return err
}

// ourProperties refuses table properties a caller may not set: every key
// must carry PropPrefix (a reserved Iceberg property such as the format
// version is never changed this way) and must not be a stream's marker.
func ourProperties(props map[string]string) error {
	for k := range props {
		if !strings.HasPrefix(k, PropPrefix) || strings.HasPrefix(k, markerPropPrefix) {
			return fmt.Errorf("%w: %q", ErrBadProperty, k)
		}
	}
	return nil
}

// propOverwritten is the table property in which Overwrite records the
// digest of the data files it left live. Table properties outlive the
// commit that set them (another writer's commit keeps them), and an
// overwrite that leaves no file makes no snapshot, so the files are what
// ties a property to the rows it describes.
const propOverwritten = PropPrefix + "overwrite.files"

// propOverwriteKeys lists (comma-separated) the properties the last
// Overwrite set for its caller: the next Overwrite removes those it does
// not set again.
const propOverwriteKeys = PropPrefix + "overwrite.props"

// filesDigest identifies a set of data files by their paths as the
// metadata names them (not where a moved warehouse has them now): their
// count and a 64-bit FNV-1a of the sorted paths.
func filesDigest(files []iceberg.DataFile) string {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.FilePath()
	}
	slices.Sort(paths)
	h := fnv.New64a()
	for _, p := range paths {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%d:%016x", len(paths), h.Sum64())
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
