package table_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/table"
)

// TestDropTable: DropTable removes a derived table's entry and its
// directory (data and metadata files), leaves its neighbour alone, is a
// no-op for a table that is not there, and refuses the appliance's own
// tables.
func TestDropTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openLake(t, table.Config{Dir: dir})
	rec := bronzeRecord(0, 0, 3)
	defer rec.Release()
	for _, id := range []string{"gold.mine", "gold.mine_too"} {
		if err := l.Overwrite(ctx, id, table.BronzeSchema, []arrow.RecordBatch{rec}, nil); err != nil {
			t.Fatal(err)
		}
	}
	mine := filepath.Join(l.Warehouse(), "gold.db", "mine")
	if _, err := os.Stat(filepath.Join(mine, "data")); err != nil {
		t.Fatalf("inconclusive: the table's files are not where the test looks: %v", err)
	}
	if err := l.DropTable(ctx, "gold.mine"); err != nil {
		t.Fatal(err)
	}
	tables, err := l.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(tables, "gold.mine") || !slices.Contains(tables, "gold.mine_too") {
		t.Fatalf("tables after the drop: %v", tables)
	}
	if _, err := os.Stat(mine); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dropped table's directory: %v, want it gone", err)
	}
	if f, err := l.DataFiles(ctx, "gold.mine_too"); err != nil || f.Rows != 3 {
		t.Fatalf("the neighbour after the drop: %+v %v", f, err)
	}
	if err := l.DropTable(ctx, "gold.mine"); err != nil {
		t.Fatalf("a second drop: %v", err)
	}
	for _, id := range []string{table.SilverEdits, table.Bronze, "ops.runs"} {
		if err := l.DropTable(ctx, id); !errors.Is(err, table.ErrOwnedTable) {
			t.Fatalf("drop %s: %v, want ErrOwnedTable", id, err)
		}
	}
}
