package table

import icecat "github.com/apache/iceberg-go/catalog"

// CatalogOf hands the tests of this package the lake's iceberg-go catalog,
// to build a lake as an earlier version left it and to inspect its tables.
// The package's API never hands it out.
func CatalogOf(l *Lake) icecat.Catalog { return l.cat }
