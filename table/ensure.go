package table

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
)

// EnsureTables creates the project's namespaces and tables if missing and
// brings existing ones up to date: it sets any managed property that differs
// and renames every column whose field id the project's schema names
// differently (Iceberg schema evolution: a lake created by an earlier version
// is upgraded in place, and its data files, which carry the old names, still
// read correctly because every reader here maps columns by field id). It
// changes no other part of a schema. Idempotent: a table already up to date
// gets no new metadata version.
func (l *Lake) EnsureTables(ctx context.Context) error {
	for _, name := range Tables {
		d := defs[name]
		spec, err := d.partitionSpec()
		if err != nil {
			return fmt.Errorf("ensure table %s: %w", name, err)
		}
		if err := l.ensureTable(ctx, name, d.schema, spec, map[string]string{"comment": d.comment}); err != nil {
			return err
		}
	}
	return nil
}

// ensureTable creates ident with schema and spec if missing; otherwise it
// renames the columns sc names differently (by field id) and sets any
// managed property that differs, in one commit.
func (l *Lake) ensureTable(ctx context.Context, ident string, sc *iceberg.Schema,
	spec *iceberg.PartitionSpec, extra map[string]string,
) error {
	id, err := parseIdent(ident)
	if err != nil {
		return err
	}
	props := maps.Clone(l.props)
	maps.Copy(props, extra)
	ns := icecat.NamespaceFromIdent(id)
	if err := l.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("ensure table %s: create namespace: %w", ident, err)
	}
	_, err = l.cat.CreateTable(ctx, id, sc,
		icecat.WithPartitionSpec(spec), icecat.WithProperties(props))
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, icecat.ErrTableAlreadyExists):
		return fmt.Errorf("ensure table %s: %w", ident, err)
	}
	defer l.lockTable(ident)()
	tbl, err := l.loadID(ctx, id)
	if err != nil {
		return fmt.Errorf("ensure table %s: %w", ident, err)
	}
	renames := columnRenames(tbl.Schema(), sc)
	changed := iceberg.Properties{}
	for k, v := range props {
		if k == icetable.PropertyFormatVersion {
			continue
		}
		if tbl.Properties()[k] != v {
			changed[k] = v
		}
	}
	if len(renames) == 0 && len(changed) == 0 {
		return nil
	}
	txn := tbl.NewTransaction()
	if len(renames) > 0 {
		us := txn.UpdateSchema(true, false)
		for _, r := range renames {
			us = us.RenameColumn([]string{r.from}, r.to)
		}
		if err := us.Commit(); err != nil {
			return fmt.Errorf("ensure table %s: rename columns %v: %w", ident, renames, err)
		}
	}
	if len(changed) > 0 {
		if err := txn.SetProperties(changed); err != nil {
			return fmt.Errorf("ensure table %s: %w", ident, err)
		}
	}
	if _, err := txn.Commit(ctx); err != nil {
		return fmt.Errorf("ensure table %s: update schema and properties: %w", ident, err)
	}
	return nil
}

// rename is one column rename of a schema upgrade.
type rename struct{ from, to string }

func (r rename) String() string { return r.from + " -> " + r.to }

// columnRenames lists the top-level columns of want whose field id have
// holds under another name, in want's column order. Field ids want lacks
// or have lacks are left alone.
func columnRenames(have, want *iceberg.Schema) []rename {
	names := map[int]string{}
	for _, h := range have.Fields() {
		names[h.ID] = h.Name
	}
	var out []rename
	for _, w := range want.Fields() {
		if name, ok := names[w.ID]; ok && name != w.Name {
			out = append(out, rename{from: name, to: w.Name})
		}
	}
	return out
}
