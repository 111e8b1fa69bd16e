package appliance

import (
	"net/http"
	"slices"
	"strings"

	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/internal/localapi"
	"lakehouse/marts"
	"lakehouse/table"
	"lakehouse/table/restcatalog"
)

// icebergPath is where the HTTP surface serves the lake's catalog over the
// Iceberg REST protocol: a client's catalog URI is http://<--http>/iceberg.
const icebergPath = localapi.IcebergPath

// OwnNamespaces are the namespaces of the tables the appliance writes
// (bronze, silver, gold, ops): their only writer is the appliance, whose
// exactly-once markers, maintenance and marts assume so.
func OwnNamespaces() map[string]bool {
	own := map[string]bool{}
	for _, id := range slices.Concat(table.Tables, marts.GoldTables, []string{marts.OpsRuns, marts.OpsAssetChecks}) {
		own[strings.SplitN(id, ".", 2)[0]] = true
	}
	return own
}

// icebergREST is the Iceberg REST catalog of the lake, mounted under
// icebergPath: the appliance's own namespaces read-only, others free for
// clients to create tables in, where the lake's location rule allows
// (table.Config.OwnNamespaces, set by tableConfig).
func (a *Appliance) icebergREST() http.Handler {
	own := OwnNamespaces()
	srv := restcatalog.New(a.lake.Catalog(), restcatalog.Options{
		ReadOnly: func(ns icetable.Identifier) bool { return len(ns) > 0 && own[ns[0]] },
		Config:   a.lake.ReaderConfig(),
		Logger:   a.log,
	})
	return http.StripPrefix(icebergPath, srv)
}
