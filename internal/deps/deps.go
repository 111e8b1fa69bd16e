// Package deps pins the appliance's chosen dependencies while the packages
// that use them are being written. Temporary.
package deps

import (
	_ "github.com/apache/arrow-go/v18/arrow/array"
	_ "github.com/apache/iceberg-go"
	_ "github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/catalogtest"
	_ "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	_ "github.com/apache/iceberg-go/table"
	_ "github.com/apache/iceberg-go/table/compaction"
	_ "github.com/duckdb/duckdb-go/v2"
	_ "github.com/johannesboyne/gofakes3"
	_ "github.com/johannesboyne/gofakes3/backend/s3mem"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/tmaxmax/go-sse"
	_ "go.etcd.io/bbolt"
)
