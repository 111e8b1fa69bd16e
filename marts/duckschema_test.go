package marts

import (
	"testing"

	"lakehouse/table"
)

// TestDuckDBSchemaMap: bronze's schema renders as a read_parquet schema map
// keyed by field id, with each column's DuckDB type, names quoted.
func TestDuckDBSchemaMap(t *testing.T) {
	sc, err := table.IcebergSchema(table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DuckDBSchemaMap(sc)
	if err != nil {
		t.Fatal(err)
	}
	want := "MAP{1: {name: 'broker_partition', type: 'INTEGER', default_value: NULL}, " +
		"2: {name: 'broker_offset', type: 'BIGINT', default_value: NULL}, " +
		"3: {name: 'broker_ts', type: 'TIMESTAMPTZ', default_value: NULL}, " +
		"4: {name: 'key', type: 'VARCHAR', default_value: NULL}, " +
		"5: {name: 'value', type: 'VARCHAR', default_value: NULL}, " +
		"6: {name: 'ingest_ts', type: 'TIMESTAMPTZ', default_value: NULL}}"
	if got != want {
		t.Fatalf("schema map of bronze:\n got %s\nwant %s", got, want)
	}
}
