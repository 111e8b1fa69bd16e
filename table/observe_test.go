package table_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/table"
)

// lakeState is what the lake itself says about ident, through its catalog.
func lakeState(t *testing.T, l *table.Lake, ident string) (snapshots int, files int, appends []table.Snapshot) {
	t.Helper()
	ctx := context.Background()
	ns, name, _ := strings.Cut(ident, ".")
	tbl, err := table.CatalogOf(l).LoadTable(ctx, []string{ns, name})
	if err != nil {
		t.Fatal(err)
	}
	df, err := l.DataFiles(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	appends, err = l.AppendsAfter(ctx, ident, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(tbl.Metadata().Snapshots()), len(df.Paths), appends
}

// TestObserverMatchesLake: after commits, compaction and expiry, the observer
// (metadata files only, no catalog) reports the snapshots and live data files
// the lake itself reports, reads an append snapshot's rows, and skips a newer
// metadata file that does not parse.
func TestObserverMatchesLake(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openLake(t, table.Config{Dir: dir})
	obs := table.Observer{Dir: l.Warehouse()}

	check := func(stage string) *table.TableView {
		t.Helper()
		snaps, files, appends := lakeState(t, l, table.Bronze)
		v, err := obs.Table(ctx, table.Bronze)
		if err != nil {
			t.Fatalf("%s: observe: %v", stage, err)
		}
		if len(v.Snapshots) != snaps || v.DataFiles != int64(files) {
			t.Errorf("%s: observer sees %d snapshots and %d live data files; the lake has %d and %d", stage, len(v.Snapshots), v.DataFiles, snaps, files)
		}
		for i := 1; i < len(v.Snapshots); i++ {
			if v.Snapshots[i].Sequence <= v.Snapshots[i-1].Sequence {
				t.Errorf("%s: snapshots not in sequence order: %d after %d", stage, v.Snapshots[i].Sequence, v.Snapshots[i-1].Sequence)
			}
		}
		if n := len(v.Snapshots); n > 0 && v.Snapshots[n-1].ID != v.CurrentSnapshotID {
			t.Errorf("%s: newest snapshot %d is not the current %d", stage, v.Snapshots[n-1].ID, v.CurrentSnapshotID)
		}
		if len(appends) > 0 && v.LastSequence < appends[len(appends)-1].Sequence {
			t.Errorf("%s: last sequence %d below the newest append's %d", stage, v.LastSequence, appends[len(appends)-1].Sequence)
		}
		if v.MetadataFiles < 1 || v.MetadataBytes <= 0 || v.LargestMetadataBytes < v.MetadataBytes {
			t.Errorf("%s: metadata files %d, current %d bytes, largest %d bytes", stage, v.MetadataFiles, v.MetadataBytes, v.LargestMetadataBytes)
		}
		return v
	}

	for i := range int64(5) {
		mustCommit(t, l, table.Bronze, batchOf("q", i, bronzeRecord(0, i*10, 10)))
	}
	v := check("after 5 commits")
	if len(v.Snapshots) != 5 || v.LastSequence != 5 {
		t.Errorf("after 5 commits: %d snapshots, last sequence %d; want 5 and 5", len(v.Snapshots), v.LastSequence)
	}

	// One append snapshot's rows, projected to one column.
	_, _, appends := lakeState(t, l, table.Bronze)
	recs, err := v.ReadAppended(ctx, appends[2].ID, "broker_offset")
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int64
	for _, r := range recs {
		if r.NumCols() != 1 {
			t.Errorf("projected read: %d columns, want 1", r.NumCols())
		}
		col := r.Column(0).(*array.Int64)
		for i := range col.Len() {
			offsets = append(offsets, col.Value(i))
		}
		r.Release()
	}
	slices.Sort(offsets)
	if len(offsets) != 10 || offsets[0] != 20 || offsets[9] != 29 {
		t.Errorf("rows of the third append: offsets %v, want 20..29", offsets)
	}
	if _, err := v.ReadAppended(ctx, 12345, "broker_offset"); !errors.Is(err, table.ErrSnapshotNotFound) {
		t.Errorf("read of an unknown snapshot: got %v, want ErrSnapshotNotFound", err)
	}

	if _, err := l.Compact(ctx, table.Bronze, mergeAll); err != nil {
		t.Fatal(err)
	}
	check("after compaction")
	if _, err := l.ExpireSnapshots(ctx, table.Bronze, 2, 0, 0); err != nil {
		t.Fatal(err)
	}
	v = check("after expiry")
	if len(v.Snapshots) != 2 || v.LastSequence != 6 {
		t.Errorf("after expiry: %d snapshots, last sequence %d; want 2 (kept) and 6 (5 appends + 1 replace)", len(v.Snapshots), v.LastSequence)
	}

	// A newer metadata file that is half written is skipped.
	cur, err := os.ReadFile(v.MetadataPath)
	if err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(filepath.Dir(v.MetadataPath), "99999-00000000-0000-0000-0000-000000000000.metadata.json")
	if err := os.WriteFile(partial, cur[:len(cur)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	w := check("with a half-written newer file")
	if w.MetadataPath != v.MetadataPath || w.Skipped != 1 {
		t.Errorf("with a half-written newer file: read %s (skipped %d), want %s (skipped 1)", w.MetadataPath, w.Skipped, v.MetadataPath)
	}

	tables, err := obs.Tables()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range table.Tables {
		if !slices.Contains(tables, want) {
			t.Errorf("Tables() = %v, lacks %s", tables, want)
		}
	}
	if _, err := obs.Table(ctx, "gold.nothing"); !errors.Is(err, table.ErrNoSuchTable) {
		t.Errorf("observe a missing table: got %v, want ErrNoSuchTable", err)
	}
}
