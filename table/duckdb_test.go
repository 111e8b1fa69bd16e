package table_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"lakehouse/marts"
	"lakehouse/table"
)

// TestDuckDBReadsDataFiles: the file list and field-id schema map from
// DataFiles are what DuckDB's read_parquet needs, offline (no extensions).
func TestDuckDBReadsDataFiles(t *testing.T) {
	l := openLake(t, table.Config{Dir: t.TempDir()})
	ctx := context.Background()
	mustCommit(t, l, table.Bronze, batchOf("bronze", 1, bronzeRecord(0, 0, 120)))
	mustCommit(t, l, table.Bronze, batchOf("bronze", 2, bronzeRecord(1, 0, 30)))
	files, err := l.DataFiles(ctx, table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "?autoinstall_known_extensions=false&autoload_known_extensions=false")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := `SELECT count(*), count(DISTINCT (broker_partition, broker_offset)), count(key),
	             min(broker_ts) < max(broker_ts), max(json_extract_string(value, '$.type'))
	      FROM read_parquet(?, schema=` + duckMap(t, files) + `, hive_partitioning=false)`
	var rows, distinct, keys int64
	var ordered bool
	var typ string
	if err := db.QueryRowContext(ctx, q, files.Paths).Scan(&rows, &distinct, &keys, &ordered, &typ); err != nil {
		t.Fatalf("duckdb: %v\nquery: %s", err, q)
	}
	if rows != 150 || distinct != 150 || keys != 100 || !ordered || typ != "edit" {
		t.Fatalf("duckdb read: got rows=%d distinct=%d keys=%d ordered=%v type=%q, want 150 150 100 true edit",
			rows, distinct, keys, ordered, typ)
	}
}

// duckMap is the read_parquet schema map of files (marts.DuckDBSchemaMap).
func duckMap(t *testing.T, files table.Files) string {
	t.Helper()
	m, err := marts.DuckDBSchemaMap(files.Schema)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
