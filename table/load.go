package table

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	icetable "github.com/apache/iceberg-go/table"
)

// load reads the table fresh from the catalog (the pointer is never cached).
func (l *Lake) load(ctx context.Context, ident string) (*icetable.Table, error) {
	id, err := parseIdent(ident)
	if err != nil {
		return nil, err
	}
	tbl, err := l.loadID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", ident, err)
	}
	return tbl, nil
}

// loadID loads a table from the catalog; a damaged or missing current
// metadata file gets the file's path on disk and the way out.
func (l *Lake) loadID(ctx context.Context, id icetable.Identifier) (*icetable.Table, error) {
	tbl, err := l.cat.LoadTable(ctx, id)
	if err != nil {
		if hint := l.damagedHint(ctx, id, err); hint != "" {
			return nil, fmt.Errorf("%w%s", err, hint)
		}
		return nil, err
	}
	return tbl, nil
}

// damagedHint says, for a current metadata file that is missing or does not
// parse, which file on disk it is and the way out: the appliance cannot
// rebuild a table's current metadata (catalog.db holds only the pointer to
// it), so it is restored from a backup. "" for other errors.
func (l *Lake) damagedHint(ctx context.Context, id icetable.Identifier, err error) string {
	if !errors.Is(err, icetable.ErrInvalidMetadata) && !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	ml, ok := l.cat.(interface {
		MetadataLocation(context.Context, icetable.Identifier) (string, error)
	})
	if !ok {
		return ""
	}
	loc, perr := ml.MetadataLocation(ctx, id)
	if perr != nil {
		return ""
	}
	if l.rooted != nil {
		if p, rerr := l.rooted.resolve(loc); rerr == nil {
			loc = p
		}
	}
	return fmt.Sprintf(" (the table's current metadata file %s is damaged or missing: nothing was changed; restore that file, or the whole data directory, from a backup)", loc)
}
