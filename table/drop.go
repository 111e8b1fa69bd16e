package table

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
)

// ErrOwnedTable: DropTable was asked to drop a table of a namespace the
// appliance writes (bronze, silver, ops).
var ErrOwnedTable = errors.New("a table the appliance writes is never dropped")

// DropTable removes a derived table (a user's model whose file is gone):
// its catalog entry, then its files: on a local warehouse its directory,
// on S3 every file its metadata names and every object under its location
// (purge). The entry goes first: a crash between the two leaves files no
// table names (as a lost commit does), never a table whose files are
// gone. Tables of the appliance's own namespaces are refused
// (ErrOwnedTable); a table that does not exist is not an error.
func (l *Lake) DropTable(ctx context.Context, ident string) error {
	id, err := parseIdent(ident)
	if err != nil {
		return err
	}
	if slices.Contains([]string{"bronze", "silver", "ops"}, id[0]) {
		return fmt.Errorf("drop %s: %w", ident, ErrOwnedTable)
	}
	unlock := l.lockTable(ident)
	defer unlock()
	tbl, err := l.loadID(ctx, id)
	if errors.Is(err, icecat.ErrNoSuchTable) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("drop %s: %w", ident, err)
	}
	if err := l.cat.DropTable(ctx, id); err != nil && !errors.Is(err, icecat.ErrNoSuchTable) {
		return fmt.Errorf("drop %s: %w", ident, err)
	}
	if l.rooted == nil {
		return l.purge(ctx, ident, tbl)
	}
	dir, err := l.rooted.resolve(tbl.Location())
	if err != nil || dir == l.rooted.actual {
		return nil // not a directory of its own under the warehouse: leave it
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("drop %s: remove its files: %w", ident, err)
	}
	return nil
}

// purge deletes, through the table's file IO, the files of a table just
// dropped from an object store: iceberg-go's PurgeFiles lists the table's
// location and unions the files its metadata names. Only a location of
// its own under the warehouse is purged (never the warehouse itself, nor
// a location elsewhere: through a REST catalog the warehouse is the
// server's, whose own drop purges).
func (l *Lake) purge(ctx context.Context, ident string, tbl *icetable.Table) error {
	if !strings.HasPrefix(l.warehouse, "s3://") {
		return nil // through a REST catalog: the server's to purge
	}
	// A location trimmed of its slash that starts with root and its slash
	// is strictly below the warehouse.
	root := strings.TrimSuffix(l.warehouse, "/") + "/"
	if !strings.HasPrefix(strings.TrimSuffix(tbl.Location(), "/"), root) {
		return nil
	}
	if err := tbl.PurgeFiles(ctx); err != nil {
		return fmt.Errorf("drop %s: delete its files: %w", ident, err)
	}
	return nil
}
