package table_test

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table"
)

// TestOverwriteRecordsWhatItLeft: the properties an Overwrite sets are
// committed with its rows, and Files.Overwritten tells whether the table
// still holds what that Overwrite left: an empty overwrite included, not
// after another engine's append, and an Overwrite without them removes
// the properties that described the rows it replaced.
func TestOverwriteRecordsWhatItLeft(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, table.Config{Dir: t.TempDir()})
	const ident = "gold.derived"
	const key = "lakehouse.test.built-from"
	overwrite := func(n int, props map[string]string) {
		t.Helper()
		var recs []arrow.RecordBatch
		if n > 0 {
			rec := bronzeRecord(0, 0, n)
			defer rec.Release()
			recs = append(recs, rec)
		}
		if err := l.Overwrite(ctx, ident, table.BronzeSchema, recs, props); err != nil {
			t.Fatalf("overwrite %d rows: %v", n, err)
		}
	}
	state := func() table.Files {
		t.Helper()
		f, err := l.DataFiles(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	overwrite(0, map[string]string{key: "empty"})
	if f := state(); !f.Overwritten || f.Properties[key] != "empty" {
		t.Fatalf("after an empty overwrite: overwritten %v, %s=%q", f.Overwritten, key, f.Properties[key])
	}
	overwrite(5, map[string]string{key: "five"})
	if f := state(); !f.Overwritten || f.Properties[key] != "five" || f.Rows != 5 {
		t.Fatalf("after an overwrite of 5 rows: overwritten %v, %s=%q, %d rows", f.Overwritten, key, f.Properties[key], f.Rows)
	}

	// Another engine appends through iceberg-go alone.
	tbl, err := table.CatalogOf(l).LoadTable(ctx, icetable.Identifier(splitIdent(ident)))
	if err != nil {
		t.Fatal(err)
	}
	rec := bronzeRecord(1, 100, 2)
	defer rec.Release()
	at := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer at.Release()
	txn := tbl.NewTransaction()
	if err := txn.AppendTable(ctx, at, 10, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if f := state(); f.Overwritten || f.Rows != 7 {
		t.Fatalf("after another engine's append: overwritten %v (want false), %d rows", f.Overwritten, f.Rows)
	}

	overwrite(3, nil)
	if f := state(); !f.Overwritten || f.Rows != 3 {
		t.Fatalf("after an overwrite without properties: overwritten %v, %d rows", f.Overwritten, f.Rows)
	} else if v, ok := f.Properties[key]; ok {
		t.Fatalf("the properties of the replaced rows survive an overwrite that does not set them: %s=%q", key, v)
	}

	for _, bad := range []string{"format-version", "lakehouse.marker.bronze", "write.target-file-size-bytes"} {
		if err := l.Overwrite(ctx, ident, table.BronzeSchema, nil, map[string]string{bad: "x"}); !errors.Is(err, table.ErrBadProperty) {
			t.Errorf("overwrite setting %q: %v, want ErrBadProperty", bad, err)
		}
	}
}

// TestCommitBatchSetsTableProps: a batch's TableProps land in the same
// commit as its rows; keys not ours are refused before anything is written.
func TestCommitBatchSetsTableProps(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, table.Config{Dir: t.TempDir()})
	rec := bronzeRecord(0, 0, 3)
	defer rec.Release()
	b := batchOf("bronze", 0, rec)
	b.TableProps = map[string]string{"lakehouse.test.state": "s1"}
	mustCommit(t, l, table.Bronze, b)
	props, err := l.Properties(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	if props["lakehouse.test.state"] != "s1" {
		t.Fatalf("table property after the commit: %q", props["lakehouse.test.state"])
	}
	bad := batchOf("bronze", 1, rec)
	bad.TableProps = map[string]string{"lakehouse.marker.bronze": "{}"}
	if _, err := l.CommitBatch(ctx, table.Bronze, bad); !errors.Is(err, table.ErrBadProperty) {
		t.Fatalf("a batch setting a marker property: %v, want ErrBadProperty", err)
	}
	if n, _ := scanOffsets(t, l, table.Bronze); n != 3 {
		t.Fatalf("the refused batch wrote rows: %d in bronze, want 3", n)
	}
}
