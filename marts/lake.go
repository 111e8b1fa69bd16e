package marts

import (
	"context"
	"errors"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/table"
)

// lakeAPI is the part of *table.Lake this package uses.
type lakeAPI interface {
	DataFiles(ctx context.Context, ident string) (table.Files, error)
	DataFilesAt(ctx context.Context, ident string, at int64) (table.Files, error)
	DataFilesWithBounds(ctx context.Context, ident, column string) (table.Files, error)
	DataFilesWithRange(ctx context.Context, ident, column string) (table.Files, error)
	Overwrite(ctx context.Context, ident string, schema *arrow.Schema, recs []arrow.RecordBatch, props map[string]string) error
	Compact(ctx context.Context, ident string, pol table.CompactPolicy) (table.CompactResult, error)
	ExpireSnapshots(ctx context.Context, ident string, keepLast int, olderThan time.Duration, protect int64) (int, error)
	DeleteOrphanFiles(ctx context.Context, ident string, olderThan time.Duration) (int, error)
	DeleteBefore(ctx context.Context, ident, column string, cutoff time.Time) (int64, error)
	Stats(ctx context.Context, ident string) (table.Stats, error)
	Properties(ctx context.Context, ident string) (map[string]string, error)
	Maintained(ctx context.Context, ident, job string) (time.Time, bool, error)
	MarkMaintained(ctx context.Context, ident, job string, at time.Time) error
	LastCommitted(ctx context.Context, ident, query string) (table.Marker, bool, error)
	CommitBatch(ctx context.Context, ident string, b table.Batch) (table.Result, error)
	Tables(ctx context.Context) ([]string, error)
	DropTable(ctx context.Context, ident string) error
	LocalFile(ctx context.Context, path string) (string, error)
	Warehouse() string
}

var _ lakeAPI = (*table.Lake)(nil)

// listTables returns every table in the lake as "namespace.name", sorted.
func listTables(ctx context.Context, lake lakeAPI) ([]string, error) {
	return lake.Tables(ctx)
}

// isNoTable reports whether err means the table does not exist.
func isNoTable(err error) bool {
	return errors.Is(err, table.ErrNoSuchTable)
}
