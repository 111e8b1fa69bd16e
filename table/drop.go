package table

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	icecat "github.com/apache/iceberg-go/catalog"
)

// ErrOwnedTable: DropTable was asked to drop a table of a namespace the
// appliance writes (bronze, silver, ops).
var ErrOwnedTable = errors.New("a table the appliance writes is never dropped")

// DropTable removes a derived table (a user's model whose file is gone):
// its catalog entry and, on a local warehouse, its directory (its data
// and metadata files). On S3 the files stay where they are. Tables of the
// appliance's own namespaces are refused (ErrOwnedTable); a table that
// does not exist is not an error.
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
		return nil
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
