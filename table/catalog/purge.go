package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	icetable "github.com/apache/iceberg-go/table"
)

// ErrPurgeIncomplete is wrapped by PurgeTable's error when the entry was
// dropped but some of the table's files were kept: refused by
// Options.Guard, or failing to delete. The drop itself stands.
var ErrPurgeIncomplete = errors.New("table dropped, some files kept")

var _ icecat.PurgeableTable = (*Catalog)(nil)

// PurgeTable drops ident's entry, then deletes its files as iceberg-go's
// Table.PurgeFiles finds them (every file under the table's location, and
// the metadata files, manifest lists, manifests and data files its
// metadata names; data files only with gc.enabled), each only if
// Options.Guard's CheckDelete allows it. Without a Guard it refuses, with
// nothing dropped (ErrLocation): the catalog cannot tell whose files they
// are. A crash after the drop leaves files no table references.
func (c *Catalog) PurgeTable(ctx context.Context, ident icetable.Identifier) error {
	tbl, err := c.LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	if c.locGuard == nil {
		return fmt.Errorf("purge table %s: %w: no guard says which files are the table's own", identString(ident), ErrLocation)
	}
	meta, loc := tbl.Metadata(), tbl.MetadataLocation()
	if err := c.DropTable(ctx, ident); err != nil {
		return err
	}
	inner := c.fsFunc(loc)
	guarded := icetable.New(ident, meta, loc, func(ctx context.Context) (iceio.IO, error) {
		fsys, err := inner(ctx)
		if err != nil {
			return nil, err
		}
		return guardedIO{IO: fsys, check: func(p string) error { return c.locGuard.CheckDelete(ident, meta, p) }}, nil
	}, c)
	if err := guarded.PurgeFiles(ctx); err != nil {
		return fmt.Errorf("purge table %s: %w: %w", identString(ident), ErrPurgeIncomplete, err)
	}
	return nil
}

// guardedIO deletes a file only if check allows it.
type guardedIO struct {
	iceio.IO
	check func(path string) error
}

func (g guardedIO) Remove(name string) error {
	if err := g.check(name); err != nil {
		return fmt.Errorf("keep %s: %w", name, err)
	}
	return g.IO.Remove(name)
}

// WalkDir walks with the file IO's own WalkDir (iceberg-go lists the
// table's location with it).
func (g guardedIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	l, ok := g.IO.(iceio.ListableIO)
	if !ok {
		return fmt.Errorf("walk %s: file IO %T cannot list", root, g.IO)
	}
	return l.WalkDir(root, fn)
}
