package marts

import (
	"context"
	"database/sql"
	"fmt"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// DuckDBVersion is the version of the DuckDB library linked in, as
// `SELECT version()` reports it (v1.x.y) with its source id.
func DuckDBVersion(ctx context.Context) (string, error) {
	conn, err := duckdb.NewConnector(duckDSN, nil)
	if err != nil {
		return "", fmt.Errorf("duckdb: %w", err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var v, id string
	if err := db.QueryRowContext(ctx, "SELECT version(), source_id FROM pragma_version()").Scan(&v, &id); err != nil {
		return "", fmt.Errorf("duckdb version: %w", err)
	}
	return v + " (" + id + ")", nil
}
