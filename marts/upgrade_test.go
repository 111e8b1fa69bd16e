package marts

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/broker"
	"lakehouse/table"
	"lakehouse/table/catalog"
)

// TestQueryUpgradedBronze: a bronze table made by the version before the
// rename (columns "partition" and "offset", rows written under those names)
// is upgraded by EnsureTables, and DuckDB then reads its old files by field
// id under the new names: in Query, which needs no quoting for them, and in
// the bronze offsets check.
func TestQueryUpgradedBronze(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	legacy := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 2, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 3, Name: "broker_ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 4, Name: "key", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 5, Name: "value", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 6, Name: "ingest_ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	)
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{3}, FieldID: 1000, Name: "broker_ts_day", Transform: iceberg.DayTransform{},
	})
	// The earlier version's catalog.db, made with the catalog directly.
	cat, err := catalog.Open(ctx, filepath.Join(dir, "catalog.db"), catalog.Options{
		Props: iceberg.Properties{"warehouse": filepath.Join(dir, "warehouse")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, icetable.Identifier{"bronze"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateTable(ctx, icetable.Identifier{"bronze", "recentchange"}, legacy,
		icecat.WithPartitionSpec(&spec), icecat.WithProperties(maps.Clone(table.DefaultTableProps))); err != nil {
		t.Fatal(err)
	}
	if err := cat.Close(); err != nil {
		t.Fatal(err)
	}
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lake.Close() })
	sc, err := icetable.SchemaToArrowSchema(legacy, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	for i, e := range fixtureEdits() {
		r := bronzeRow(0, int64(i), e["type"].(string), e["event_time"].(time.Time))
		r["partition"], r["offset"] = r["broker_partition"], r["broker_offset"]
		rows = append(rows, r)
	}
	commit(t, lake, table.Bronze, "bronze", 0, sc, rows)
	if err := lake.EnsureTables(ctx); err != nil {
		t.Fatalf("ensure tables on the legacy lake: %v", err)
	}

	var out bytes.Buffer
	sql := `SELECT broker_partition, count(*) AS n, count(DISTINCT broker_offset) AS d, min(broker_offset) AS lo, max(broker_offset) AS hi
		FROM bronze.recentchange GROUP BY broker_partition`
	if err := Query(ctx, lake, sql, FormatCSV, &out, QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "broker_partition,n,d,lo,hi\n0,20,20,0,19\n"; got != want {
		t.Errorf("query of the upgraded bronze: got %q, want %q", got, want)
	}

	// New rows land beside the old ones and the offsets check sees both.
	commit(t, lake, table.Bronze, "bronze", 1, table.BronzeSchema, []row{bronzeRow(0, 20, "edit", t0)})
	log := fakeLog{offsets: []broker.PartitionOffsets{{Partition: 0, Start: 0, End: 21}}}
	checks, _ := New(lake, log, Config{Logger: slog.New(slog.DiscardHandler)}).Check(ctx)
	found := false
	for _, c := range checks {
		if c.Name != CheckBronzeOffsets {
			continue
		}
		found = true
		if !c.Passed || c.Numbers["bronze_rows"] != 21 || c.Numbers["lag"] != 0 {
			t.Errorf("bronze offsets check on the upgraded lake: got %v, want a pass over 21 rows, no lag", c)
		}
	}
	if !found {
		t.Fatalf("no %s check in %v", CheckBronzeOffsets, checks)
	}
}
