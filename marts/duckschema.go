package marts

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
)

// DuckDBSchemaMap renders a table's top-level columns as a DuckDB
// read_parquet schema map keyed by Parquet field id, what DuckDB needs to
// read the table's data files (table.Files) by id rather than by name, so a
// renamed column reads under its new name and union_by_name never pairs
// the wrong columns:
//
//	read_parquet([...], schema=MAP{1: {name: 'a', type: 'BIGINT', default_value: NULL}, ...}, hive_partitioning=false)
func DuckDBSchemaMap(sc *iceberg.Schema) (string, error) {
	var b strings.Builder
	b.WriteString("MAP{")
	for i, f := range sc.Fields() {
		t, err := duckType(f.Type)
		if err != nil {
			return "", fmt.Errorf("column %q: %w", f.Name, err)
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d: {name: '%s', type: '%s', default_value: NULL}",
			f.ID, strings.ReplaceAll(f.Name, "'", "''"), t)
	}
	b.WriteString("}")
	return b.String(), nil
}

func duckType(t iceberg.Type) (string, error) {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return "BOOLEAN", nil
	case iceberg.Int32Type:
		return "INTEGER", nil
	case iceberg.Int64Type:
		return "BIGINT", nil
	case iceberg.Float32Type:
		return "FLOAT", nil
	case iceberg.Float64Type:
		return "DOUBLE", nil
	case iceberg.StringType:
		return "VARCHAR", nil
	case iceberg.BinaryType, iceberg.FixedType:
		return "BLOB", nil
	case iceberg.DateType:
		return "DATE", nil
	case iceberg.TimeType:
		return "TIME", nil
	case iceberg.TimestampType:
		return "TIMESTAMP", nil
	case iceberg.TimestampTzType:
		return "TIMESTAMPTZ", nil
	case iceberg.UUIDType:
		return "UUID", nil
	case iceberg.DecimalType:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision(), t.Scale()), nil
	default:
		return "", fmt.Errorf("type %s has no DuckDB mapping here", t)
	}
}
