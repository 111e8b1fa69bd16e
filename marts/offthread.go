package marts

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/table"
)

// offThread runs each lake call on a goroutine of its own. A Refresh and a
// Check lock their goroutine to one OS thread for DuckDB (refresh.go), and
// iceberg-go's coroutines (iter.Pull) must not run on a locked goroutine:
// the runtime aborts the process ("coro: OS thread locking must match").
// Every lake call of this package goes through it (newMarts), so no code
// path can call iceberg-go from the locked goroutine.
type offThread struct{ l lakeAPI }

// off runs f on a new goroutine and waits for it.
func off[T any](f func() (T, error)) (T, error) {
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := f(); ch <- res{v, err} }()
	r := <-ch
	return r.v, r.err
}

func (o offThread) Warehouse() string { return o.l.Warehouse() }
func (o offThread) LocalFile(ctx context.Context, path string) (string, error) {
	return off(func() (string, error) { return o.l.LocalFile(ctx, path) })
}
func (o offThread) DataFiles(ctx context.Context, ident string) (table.Files, error) {
	return off(func() (table.Files, error) { return o.l.DataFiles(ctx, ident) })
}
func (o offThread) DataFilesAt(ctx context.Context, ident string, at int64) (table.Files, error) {
	return off(func() (table.Files, error) { return o.l.DataFilesAt(ctx, ident, at) })
}
func (o offThread) DataFilesWithBounds(ctx context.Context, ident, column string) (table.Files, error) {
	return off(func() (table.Files, error) { return o.l.DataFilesWithBounds(ctx, ident, column) })
}
func (o offThread) DataFilesWithRange(ctx context.Context, ident, column string) (table.Files, error) {
	return off(func() (table.Files, error) { return o.l.DataFilesWithRange(ctx, ident, column) })
}
func (o offThread) Overwrite(ctx context.Context, ident string, schema *arrow.Schema, recs []arrow.RecordBatch, props map[string]string) error {
	_, err := off(func() (struct{}, error) { return struct{}{}, o.l.Overwrite(ctx, ident, schema, recs, props) })
	return err
}
func (o offThread) Compact(ctx context.Context, ident string, pol table.CompactPolicy) (table.CompactResult, error) {
	return off(func() (table.CompactResult, error) { return o.l.Compact(ctx, ident, pol) })
}
func (o offThread) ExpireSnapshots(ctx context.Context, ident string, keepLast int, olderThan time.Duration, protect int64) (int, error) {
	return off(func() (int, error) { return o.l.ExpireSnapshots(ctx, ident, keepLast, olderThan, protect) })
}
func (o offThread) DeleteOrphanFiles(ctx context.Context, ident string, olderThan time.Duration) (int, error) {
	return off(func() (int, error) { return o.l.DeleteOrphanFiles(ctx, ident, olderThan) })
}
func (o offThread) DeleteBefore(ctx context.Context, ident, column string, cutoff time.Time) (int64, error) {
	return off(func() (int64, error) { return o.l.DeleteBefore(ctx, ident, column, cutoff) })
}
func (o offThread) Stats(ctx context.Context, ident string) (table.Stats, error) {
	return off(func() (table.Stats, error) { return o.l.Stats(ctx, ident) })
}
func (o offThread) Maintained(ctx context.Context, ident, job string) (time.Time, bool, error) {
	type tb struct {
		t time.Time
		b bool
	}
	r, err := off(func() (tb, error) { t, b, err := o.l.Maintained(ctx, ident, job); return tb{t, b}, err })
	return r.t, r.b, err
}
func (o offThread) Properties(ctx context.Context, ident string) (map[string]string, error) {
	return off(func() (map[string]string, error) { return o.l.Properties(ctx, ident) })
}
func (o offThread) MarkMaintained(ctx context.Context, ident, job string, at time.Time) error {
	_, err := off(func() (struct{}, error) { return struct{}{}, o.l.MarkMaintained(ctx, ident, job, at) })
	return err
}
func (o offThread) LastCommitted(ctx context.Context, ident, query string) (table.Marker, bool, error) {
	type mb struct {
		m table.Marker
		b bool
	}
	r, err := off(func() (mb, error) { m, b, err := o.l.LastCommitted(ctx, ident, query); return mb{m, b}, err })
	return r.m, r.b, err
}
func (o offThread) CommitBatch(ctx context.Context, ident string, b table.Batch) (table.Result, error) {
	return off(func() (table.Result, error) { return o.l.CommitBatch(ctx, ident, b) })
}
func (o offThread) Tables(ctx context.Context) ([]string, error) {
	return off(func() ([]string, error) { return o.l.Tables(ctx) })
}

func (o offThread) DropTable(ctx context.Context, ident string) error {
	_, err := off(func() (struct{}, error) { return struct{}{}, o.l.DropTable(ctx, ident) })
	return err
}
