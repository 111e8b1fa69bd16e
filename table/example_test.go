package table_test

import (
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/table"
)

// A streaming query commits each micro-batch exactly once: a replay of the
// same (query, batch) commits nothing, and the marker tells a restarted
// query where it stopped.
func ExampleLake_CommitBatch() {
	dir, _ := os.MkdirTemp("", "lake")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	l, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	if err := l.EnsureTables(ctx); err != nil {
		panic(err)
	}
	rec := bronzeRecord(0, 0, 3) // built from table.BronzeSchema
	defer rec.Release()
	b := table.Batch{Query: "bronze", ID: 1, Offsets: `{"0":3}`, Records: []arrow.RecordBatch{rec}}

	first, _ := l.CommitBatch(ctx, table.Bronze, b)
	replay, _ := l.CommitBatch(ctx, table.Bronze, b)
	m, _, _ := l.LastCommitted(ctx, table.Bronze, "bronze")
	fmt.Println(first.Committed, first.Rows, replay.Committed, m.Batch, m.Offsets)
	// Output: true 3 false 1 {"0":3}
}
