package silvertest

import (
	"context"
	"testing"

	"lakehouse/table"
)

// OpenLake opens the lake in dir with every table created, failing t on
// error.
func OpenLake(t testing.TB, dir string) *table.Lake {
	t.Helper()
	ctx := context.Background()
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.EnsureTables(ctx); err != nil {
		lake.Close()
		t.Fatal(err)
	}
	return lake
}

// MarkerBatch returns the last batch query committed to table ident of the
// lake in dir, or -1 if it committed none. It opens and closes the lake.
func MarkerBatch(t testing.TB, dir, ident, query string) int64 {
	t.Helper()
	lake := OpenLake(t, dir)
	defer lake.Close()
	m, ok, err := lake.LastCommitted(context.Background(), ident, query)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return -1
	}
	return m.Batch
}
