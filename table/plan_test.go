package table_test

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table"
)

// splitEveryRowGroup makes ident's data files split the way a large file
// is split by iceberg-go's planner (read.split.target-size, 128 MiB by
// default): row groups of 100 rows, and a split target of one byte, so a
// plan gives one task per row group.
func splitEveryRowGroup(t testing.TB, l *table.Lake, ident string) {
	t.Helper()
	setTableProps(t, l, ident, iceberg.Properties{
		icetable.ParquetRowGroupLimitKey: "100",
		icetable.ReadSplitTargetSizeKey:  "1",
	})
}

func setTableProps(t testing.TB, l *table.Lake, ident string, props iceberg.Properties) {
	t.Helper()
	ctx := context.Background()
	tbl, err := table.CatalogOf(l).LoadTable(ctx, icetable.Identifier(splitIdent(ident)))
	if err != nil {
		t.Fatalf("load %s: %v", ident, err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(props); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatalf("set properties of %s: %v", ident, err)
	}
}

func splitIdent(ident string) []string {
	i := len(ident) - 1
	for ident[i] != '.' {
		i--
	}
	return []string{ident[:i], ident[i+1:]}
}

// liveFiles reads ident's live data files from its current snapshot's
// manifests (not through a scan plan): path -> record count.
func liveFiles(t testing.TB, l *table.Lake, ident string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	tbl, err := table.CatalogOf(l).LoadTable(ctx, icetable.Identifier(splitIdent(ident)))
	if err != nil {
		t.Fatalf("load %s: %v", ident, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mans, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, m := range mans {
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := out[e.DataFile().FilePath()]; dup {
				t.Fatalf("the manifests of %s list %s twice", ident, e.DataFile().FilePath())
			}
			out[e.DataFile().FilePath()] = e.DataFile().Count()
		}
	}
	return out
}

// TestPlanListsEachFileOnce: with data files split into several scan
// tasks (as iceberg-go splits a file over read.split.target-size), every
// planned list of live files (DataFiles for DuckDB, the file check of
// reland) names each file the manifests hold once, with the table's rows,
// and a scan reads each row once.
func TestPlanListsEachFileOnce(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, table.Config{Dir: t.TempDir()})
	splitEveryRowGroup(t, l, table.Bronze)
	commitEventFiles(t, l, 7, 3, 1000, func(int) bool { return false })

	want := liveFiles(t, l, table.Bronze)
	var wantRows int64
	for _, n := range want {
		wantRows += n
	}
	tbl, err := table.CatalogOf(l).LoadTable(ctx, icetable.Identifier(splitIdent(table.Bronze)))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 || len(tasks) <= len(want) || wantRows != 3000 {
		t.Fatalf("inconclusive: %d live files of %d rows planned as %d tasks; want 3 files of 3000 rows split into more tasks", len(want), wantRows, len(tasks))
	}

	f, err := l.DataFiles(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(f.Paths))
	wantPaths := make([]string, 0, len(want))
	for p := range want {
		wantPaths = append(wantPaths, p)
	}
	slices.Sort(wantPaths)
	if !slices.Equal(got, wantPaths) || f.Rows != wantRows {
		t.Errorf("DataFiles: %d paths (%d distinct, %d rows), want the %d live files (%d rows)", len(got), len(slices.Compact(got)), f.Rows, len(wantPaths), wantRows)
	}
	for _, planned := range []func() (table.Files, error){
		func() (table.Files, error) { return l.DataFilesWithRange(ctx, table.Bronze, "broker_offset") },
		func() (table.Files, error) { return l.DataFilesWithBounds(ctx, table.Bronze, "broker_ts") },
	} {
		f, err := planned()
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Paths) != len(want) || len(f.Ranges)+len(f.Bounds) != len(want) || f.Rows != wantRows {
			t.Errorf("planned with statistics: %d paths, %d ranges, %d bounds, %d rows; want %d each and %d rows",
				len(f.Paths), len(f.Ranges), len(f.Bounds), f.Rows, len(want), wantRows)
		}
	}
	fc, err := l.CheckDataFiles(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	if fc.Files != len(want) || fc.Rows != wantRows {
		t.Errorf("CheckDataFiles: %d files, %d rows; want %d, %d", fc.Files, fc.Rows, len(want), wantRows)
	}
	rows, offsets := scanOffsets(t, l, table.Bronze)
	if rows != wantRows || len(offsets) != int(wantRows) {
		t.Errorf("scan: %d rows, %d distinct offsets; want %d of each", rows, len(offsets), wantRows)
	}
}

// TestCompactSplitFilesOnce: compaction of files the planner splits reads
// each file once: the merged table holds every row once.
func TestCompactSplitFilesOnce(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, table.Config{Dir: t.TempDir()})
	splitEveryRowGroup(t, l, table.Bronze)
	commitEventFiles(t, l, 8, 4, 500, func(int) bool { return false })
	res, err := l.Compact(ctx, table.Bronze, mergeAll)
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRemoved < 2 {
		t.Fatalf("inconclusive: compaction replaced %d files", res.FilesRemoved)
	}
	if res.RowsMoved != 2000 {
		t.Errorf("compaction moved %d rows, want 2000", res.RowsMoved)
	}
	rows, offsets := scanOffsets(t, l, table.Bronze)
	if rows != 2000 || len(offsets) != 2000 {
		t.Errorf("after compaction: %d rows, %d distinct offsets; want 2000 of each", rows, len(offsets))
	}
}

// TestOverwriteOfSplitFilesReplacesThem: an overwrite removes each live
// file once, whatever the plan's split.
func TestOverwriteOfSplitFilesReplacesThem(t *testing.T) {
	ctx := context.Background()
	l := openLake(t, table.Config{Dir: t.TempDir()})
	const ident = "gold.split"
	overwrite := func(n int) {
		t.Helper()
		rec := bronzeRecord(0, 0, n)
		defer rec.Release()
		if err := l.Overwrite(ctx, ident, table.BronzeSchema, []arrow.RecordBatch{rec}, nil); err != nil {
			t.Fatalf("overwrite %s with %d rows: %v", ident, n, err)
		}
	}
	overwrite(1)
	splitEveryRowGroup(t, l, ident)
	overwrite(1000)
	tbl, err := table.CatalogOf(l).LoadTable(ctx, icetable.Identifier(splitIdent(ident)))
	if err != nil {
		t.Fatal(err)
	}
	if tasks, err := tbl.Scan().PlanFiles(ctx); err != nil || len(tasks) < 2 {
		t.Fatalf("inconclusive: the 1000-row file planned as %d tasks (%v)", len(tasks), err)
	}
	overwrite(10)
	if rows, _ := scanOffsets(t, l, ident); rows != 10 {
		t.Errorf("after overwrite: %d rows, want 10", rows)
	}
	if got := liveFiles(t, l, ident); len(got) != 1 {
		t.Errorf("after overwrite: %d live files, want 1", len(got))
	}
}
