package table_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table"
)

// legacyBronze is bronze.recentchange as the versions before the rename
// created it: columns 1 and 2 named "partition" and "offset".
var legacyBronze = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true, Doc: "broker partition"},
	iceberg.NestedField{ID: 2, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true, Doc: "broker offset, dense per partition"},
	iceberg.NestedField{ID: 3, Name: "broker_ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true, Doc: "time the broker appended the event"},
	iceberg.NestedField{ID: 4, Name: "key", Type: iceberg.PrimitiveTypes.String, Doc: "broker message key"},
	iceberg.NestedField{ID: 5, Name: "value", Type: iceberg.PrimitiveTypes.String, Required: true, Doc: "raw event JSON exactly as received"},
	iceberg.NestedField{ID: 6, Name: "ingest_ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true, Doc: "time the bronze batch was written"},
)

// legacyLake opens a lake holding only a bronze table of the old schema,
// made through the catalog as the old EnsureTables made it, with two
// batches committed in the old schema (partition 0 offsets 0..59 straddling
// midnight, so two day files, and partition 1 offsets 0..19). It does not
// run EnsureTables.
func legacyLake(t *testing.T, cfg table.Config) *table.Lake {
	t.Helper()
	ctx := context.Background()
	l, err := table.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open lake: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	cat := table.CatalogOf(l)
	if err := cat.CreateNamespace(ctx, icetable.Identifier{"bronze"}, nil); err != nil {
		t.Fatal(err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{3}, FieldID: 1000, Name: "broker_ts_day", Transform: iceberg.DayTransform{},
	})
	props := maps.Clone(table.DefaultTableProps)
	props["comment"] = "raw Wikimedia recentchange events, one row per broker offset"
	if _, err := cat.CreateTable(ctx, icetable.Identifier{"bronze", "recentchange"}, legacyBronze,
		icecat.WithPartitionSpec(&spec), icecat.WithProperties(props)); err != nil {
		t.Fatal(err)
	}
	sc, err := icetable.SchemaToArrowSchema(legacyBronze, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, part := range []struct {
		p int32
		n int
	}{{0, 60}, {1, 20}} {
		rec := legacyRecord(t, sc, part.p, part.n)
		mustCommit(t, l, table.Bronze, batchOf("bronze", int64(i+1), rec))
		rec.Release()
	}
	return l
}

// legacyRecord is bronzeRecord's rows in the old schema: it takes the new
// schema's columns and renames them, so a test of the old schema fails if
// the names are not what the old version wrote.
func legacyRecord(t *testing.T, old *arrow.Schema, p int32, n int) arrow.RecordBatch {
	t.Helper()
	rec := bronzeRecord(p, 0, n)
	defer rec.Release()
	if got, want := old.Field(0).Name+","+old.Field(1).Name, "partition,offset"; got != want {
		t.Fatalf("legacy schema columns: got %s, want %s", got, want)
	}
	return array.NewRecordBatch(old, rec.Columns(), rec.NumRows())
}

// pairsByName reads every (partition, offset) of recs from the named
// columns, failing if they are missing.
func pairsByName(t *testing.T, recs []arrow.RecordBatch, partCol, offCol string) [][2]int64 {
	t.Helper()
	var out [][2]int64
	for _, r := range recs {
		pi, oi := r.Schema().FieldIndices(partCol), r.Schema().FieldIndices(offCol)
		if len(pi) != 1 || len(oi) != 1 {
			t.Fatalf("no %s and %s columns in %s", partCol, offCol, r.Schema())
		}
		pc, oc := r.Column(pi[0]).(*array.Int32), r.Column(oi[0]).(*array.Int64)
		for i := range int(r.NumRows()) {
			out = append(out, [2]int64{int64(pc.Value(i)), oc.Value(i)})
		}
	}
	slices.SortFunc(out, func(a, b [2]int64) int {
		if a[0] != b[0] {
			return int(a[0] - b[0])
		}
		return int(a[1] - b[1])
	})
	return out
}

func wantPairs(parts ...[3]int64) [][2]int64 { // each {partition, from, to}: offsets [from, to)
	var out [][2]int64
	for _, p := range parts {
		for o := p[1]; o < p[2]; o++ {
			out = append(out, [2]int64{p[0], o})
		}
	}
	return out
}

func scanPairs(t *testing.T, l *table.Lake, partCol, offCol string) [][2]int64 {
	t.Helper()
	recs, err := l.Scan(context.Background(), table.Bronze)
	if err != nil {
		t.Fatalf("scan bronze: %v", err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	return pairsByName(t, recs, partCol, offCol)
}

func metadataLocation(t *testing.T, l *table.Lake) (string, int) {
	t.Helper()
	tbl, err := table.CatalogOf(l).LoadTable(context.Background(), icetable.Identifier{"bronze", "recentchange"})
	if err != nil {
		t.Fatal(err)
	}
	return tbl.MetadataLocation(), tbl.Schema().ID
}

// TestEnsureTablesUpgradesBronzeColumns: a lake whose bronze was created by
// the version before the rename (columns "partition" and "offset") is
// upgraded in place by EnsureTables: the columns are renamed by Iceberg
// schema evolution with their field ids kept, the old data files read back
// under the new names (iceberg-go scans, incremental reads of the old
// snapshots, the observer, DuckDB through DataFiles' field-id map, and after
// compaction mixes old and new files), the batch marker survives, new
// commits land with the new names and the old names are refused, and a
// second EnsureTables writes no new metadata version.
func TestEnsureTablesUpgradesBronzeColumns(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			testUpgradeBronzeColumns(t, b)
		})
	}
}

func testUpgradeBronzeColumns(t *testing.T, b backend) {
	ctx := context.Background()
	l := legacyLake(t, b.cfg(t, t.TempDir()))
	old := wantPairs([3]int64{0, 0, 60}, [3]int64{1, 0, 20})
	if got := scanPairs(t, l, "partition", "offset"); !slices.Equal(got, old) {
		t.Fatalf("legacy lake before the upgrade: got %d rows, want %d", len(got), len(old))
	}
	oldAppends, err := l.AppendsAfter(ctx, table.Bronze, 0)
	if err != nil || len(oldAppends) != 2 {
		t.Fatalf("legacy appends: %d, %v; want 2", len(oldAppends), err)
	}
	before, schemaBefore := metadataLocation(t, l)

	if err := l.EnsureTables(ctx); err != nil {
		t.Fatalf("ensure tables on the legacy lake: %v", err)
	}
	upgraded, schemaID := metadataLocation(t, l)
	if upgraded == before || schemaID == schemaBefore {
		t.Fatalf("EnsureTables did not upgrade bronze: metadata %s, schema id %d (was %s, %d)", upgraded, schemaID, before, schemaBefore)
	}
	tbl, err := table.CatalogOf(l).LoadTable(ctx, icetable.Identifier{"bronze", "recentchange"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := table.IcebergSchema(table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range want.Fields() {
		got, ok := tbl.Schema().FindFieldByID(f.ID)
		if !ok || got.Name != f.Name || !got.Type.Equals(f.Type) || got.Required != f.Required {
			t.Errorf("upgraded field %d: got %+v (found %v), want %+v", f.ID, got, ok, f)
		}
	}
	if n := len(tbl.Schema().Fields()); n != len(want.Fields()) {
		t.Errorf("upgraded schema has %d columns, want %d", n, len(want.Fields()))
	}
	if got := len(tbl.Metadata().Snapshots()); got != 2 {
		t.Errorf("upgrade changed the snapshots: %d, want 2", got)
	}

	// Idempotent: the second run writes nothing.
	if err := l.EnsureTables(ctx); err != nil {
		t.Fatalf("second ensure tables: %v", err)
	}
	if again, _ := metadataLocation(t, l); again != upgraded {
		t.Fatalf("second EnsureTables wrote a new metadata version: %s, want %s", again, upgraded)
	}

	// The old files read by field id under the new names.
	if got := scanPairs(t, l, "broker_partition", "broker_offset"); !slices.Equal(got, old) {
		t.Fatalf("scan after the upgrade: got %d pairs, want %d", len(got), len(old))
	}
	var appended []arrow.RecordBatch
	for _, s := range oldAppends {
		recs, err := l.ReadAppended(ctx, table.Bronze, s.ID)
		if err != nil {
			t.Fatalf("read pre-upgrade snapshot %d: %v", s.ID, err)
		}
		appended = append(appended, recs...)
	}
	if got := pairsByName(t, appended, "broker_partition", "broker_offset"); !slices.Equal(got, old) {
		t.Fatalf("pre-upgrade snapshots read after it: got %d pairs, want %d", len(got), len(old))
	}
	for _, r := range appended {
		r.Release()
	}
	if b.name == "local" {
		v, err := table.Observer{Dir: l.Warehouse()}.Table(ctx, table.Bronze)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := v.ReadAppended(ctx, oldAppends[0].ID, "broker_partition", "broker_offset")
		if err != nil {
			t.Fatalf("observer read of a pre-upgrade snapshot: %v", err)
		}
		if got := pairsByName(t, recs, "broker_partition", "broker_offset"); !slices.Equal(got, wantPairs([3]int64{0, 0, 60})) {
			t.Errorf("observer read of a pre-upgrade snapshot: got %d pairs, want 60", len(got))
		}
		for _, r := range recs {
			r.Release()
		}
		duckPairs(t, l, old)
	}
	if m, ok, err := l.LastCommitted(ctx, table.Bronze, "bronze"); err != nil || !ok || m.Batch != 2 {
		t.Fatalf("marker after the upgrade: %+v, %v, %v; want batch 2", m, ok, err)
	}

	// New commits land with the new names; the old names are refused.
	mustCommit(t, l, table.Bronze, batchOf("bronze", 3, bronzeRecord(0, 60, 40)))
	sc, err := icetable.SchemaToArrowSchema(legacyBronze, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	stale := legacyRecord(t, sc, 2, 5)
	defer stale.Release()
	if _, err := l.CommitBatch(ctx, table.Bronze, batchOf("bronze", 4, stale)); !errors.Is(err, table.ErrSchemaMismatch) {
		t.Fatalf("commit in the old schema after the upgrade: got %v, want ErrSchemaMismatch", err)
	}
	all := wantPairs([3]int64{0, 0, 100}, [3]int64{1, 0, 20})
	if got := scanPairs(t, l, "broker_partition", "broker_offset"); !slices.Equal(got, all) {
		t.Fatalf("scan after a new commit: got %d pairs, want %d", len(got), len(all))
	}

	// Compaction merges files of both schemas into files of the new one.
	if _, err := l.Compact(ctx, table.Bronze, mergeAll); err != nil {
		t.Fatalf("compact after the upgrade: %v", err)
	}
	if got := scanPairs(t, l, "broker_partition", "broker_offset"); !slices.Equal(got, all) {
		t.Fatalf("scan after compaction: got %d pairs, want %d", len(got), len(all))
	}
	if b.name == "local" {
		duckPairs(t, l, all)
	}
}

// duckPairs reads bronze with DuckDB through DataFiles (by field id) and
// compares its (broker_partition, broker_offset) pairs with want.
func duckPairs(t *testing.T, l *table.Lake, want [][2]int64) {
	t.Helper()
	ctx := context.Background()
	files, err := l.DataFiles(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	if m := duckMap(t, files); !strings.Contains(m, "1: {name: 'broker_partition'") || !strings.Contains(m, "2: {name: 'broker_offset'") {
		t.Fatalf("schema map lacks the new names: %s", m)
	}
	db, err := sql.Open("duckdb", "?autoinstall_known_extensions=false&autoload_known_extensions=false")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT broker_partition, broker_offset
		FROM read_parquet(?, schema=`+duckMap(t, files)+`, hive_partitioning=false) ORDER BY 1, 2`, files.Paths)
	if err != nil {
		t.Fatalf("duckdb: %v", err)
	}
	defer rows.Close()
	var got [][2]int64
	for rows.Next() {
		var p, o int64
		if err := rows.Scan(&p, &o); err != nil {
			t.Fatal(err)
		}
		got = append(got, [2]int64{p, o})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("duckdb pairs: got %d, want %d (%s)", len(got), len(want), fmt.Sprint(got[:min(len(got), 5)]))
	}
}
