package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/health"
	"lakehouse/internal/localapi"
	"lakehouse/table"
)

// TestIcebergRESTScansEqualEmbedded: another engine attached to the running
// appliance's Iceberg REST catalog (iceberg-go's REST client, with the
// bearer token) lists the appliance's namespaces and tables, loads bronze
// and silver and scans them: the rows equal the embedded catalog's scan of
// the same tables. Without the token it gets 401; the appliance's tables
// refuse a commit (403); the client may create tables in a namespace of its
// own, not in the appliance's directories (403).
func TestIcebergRESTScansEqualEmbedded(t *testing.T) {
	src := replay.New(replay.Config{Seed: 21, Restamp: true})
	src.Loops(replay.Generate(21, 400), 1)
	a := startAppliance(t, src, func(f *appliance.Config, _ *health.Rules) { f.HTTPToken = "s3cret" })
	a.drained(t, src.Counts().OnTime)
	ctx := context.Background()
	uri := a.base + localapi.IcebergPath

	if _, err := rest.NewCatalog(ctx, "lakehouse", uri); !errors.Is(err, rest.ErrUnauthorized) {
		t.Errorf("REST client without the token: got %v, want 401 (rest.ErrUnauthorized)", err)
	}
	cl, err := rest.NewCatalog(ctx, "lakehouse", uri, rest.WithOAuthToken("s3cret"))
	if err != nil {
		t.Fatalf("REST client: %v", err)
	}
	defer cl.Close()
	// gold is created by the first marts refresh, which runs beside the
	// drain: on a loaded machine it can come after it, so wait for it.
	var nss []icetable.Identifier
	hasAll := func() bool {
		for _, want := range []string{"bronze", "silver", "gold", "ops"} {
			if !slices.ContainsFunc(nss, func(ns icetable.Identifier) bool { return slices.Equal(ns, icetable.Identifier{want}) }) {
				return false
			}
		}
		return true
	}
	waitFor(t, 3*time.Minute, "bronze, silver, gold and ops through REST", func() bool {
		nss, err = cl.ListNamespaces(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return hasAll()
	})
	var silverTables []string
	for id, err := range cl.ListTables(ctx, icetable.Identifier{"silver"}) {
		if err != nil {
			t.Fatal(err)
		}
		silverTables = append(silverTables, strings.Join(id, "."))
	}
	if !slices.Contains(silverTables, table.SilverEdits) || !slices.Contains(silverTables, table.EditorSessions) {
		t.Errorf("silver tables through REST: %v", silverTables)
	}

	// Other namespaces are the client's, but not the appliance's directories.
	if err := cl.CreateNamespace(ctx, icetable.Identifier{"client"}, nil); err != nil {
		t.Fatalf("create a client namespace: %v", err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := cl.CreateTable(ctx, icetable.Identifier{"client", "t"}, sc); err != nil {
		t.Errorf("create a client table: %v", err)
	}
	if _, err := cl.CreateTable(ctx, icetable.Identifier{"client", "x"}, sc,
		icecat.WithLocation(a.p.Lake().Warehouse()+"/bronze.db/x")); !errors.Is(err, rest.ErrForbidden) {
		t.Errorf("create a client table in bronze's directory: got %v, want 403 (rest.ErrForbidden)", err)
	}
	for _, ident := range []string{table.Bronze, table.SilverEdits} {
		tbl, err := cl.LoadTable(ctx, strings.Split(ident, "."))
		if err != nil {
			t.Fatalf("load %s through REST: %v", ident, err)
		}
		at, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatalf("scan %s through REST: %v", ident, err)
		}
		viaREST := tableRows(t, at)
		at.Release()
		recs, err := a.p.Lake().Scan(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		embedded := recordRows(recs)
		for _, r := range recs {
			r.Release()
		}
		if len(embedded) == 0 {
			t.Fatalf("%s: the embedded scan is empty; nothing to compare", ident)
		}
		if !slices.Equal(viaREST, embedded) {
			t.Errorf("%s: %d rows through REST, %d embedded, not equal (first REST row %q, first embedded %q)",
				ident, len(viaREST), len(embedded), first(viaREST), first(embedded))
		}
		t.Logf("%s: %d rows through REST equal the embedded scan", ident, len(viaREST))

		txn := tbl.NewTransaction()
		if err := txn.SetProperties(map[string]string{"foreign": "write"}); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(ctx); !errors.Is(err, rest.ErrForbidden) {
			t.Errorf("commit to %s through REST: got %v, want 403 (rest.ErrForbidden)", ident, err)
		}
	}
}

func first(rows []string) string {
	if len(rows) == 0 {
		return ""
	}
	return rows[0]
}

// tableRows renders every row of an Arrow table as one string, sorted.
func tableRows(t *testing.T, at arrow.Table) []string {
	t.Helper()
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	var recs []arrow.RecordBatch
	for tr.Next() {
		recs = append(recs, tr.RecordBatch())
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	return recordRows(recs)
}

// recordRows renders every row of recs as "name=value|..." in schema
// order, sorted.
func recordRows(recs []arrow.RecordBatch) []string {
	var out []string
	for _, r := range recs {
		for i := range int(r.NumRows()) {
			var b strings.Builder
			for c, f := range r.Schema().Fields() {
				fmt.Fprintf(&b, "%s=%s|", f.Name, r.Column(c).ValueStr(i))
			}
			out = append(out, b.String())
		}
	}
	slices.Sort(out)
	return out
}
