package restcatalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"
	"github.com/apache/iceberg-go/catalog/rest"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table/catalog"
	"lakehouse/table/restcatalog"
)

// serve opens an embedded catalog in dir and serves it over REST on
// 127.0.0.1; it returns the catalog and the server's base URL.
func serve(t *testing.T, dir string, opts restcatalog.Options) (*catalog.Catalog, string) {
	t.Helper()
	return serveGuarded(t, dir, nil, opts)
}

// serveGuarded is serve with the catalog's location guard.
func serveGuarded(t *testing.T, dir string, guard catalog.Guard, opts restcatalog.Options) (*catalog.Catalog, string) {
	t.Helper()
	c, err := catalog.Open(context.Background(), filepath.Join(dir, "catalog.db"), catalog.Options{
		Props: iceberg.Properties{"warehouse": filepath.Join(dir, "warehouse")},
		Guard: guard,
	})
	if err != nil {
		t.Fatalf("open catalog: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	srv := httptest.NewServer(restcatalog.New(c, opts))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

// client is iceberg-go's own REST client on url.
func client(t *testing.T, url string) *rest.Catalog {
	t.Helper()
	cl, err := rest.NewCatalog(context.Background(), "lakehouse", url)
	if err != nil {
		t.Fatalf("REST client: %v", err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// TestConformance runs iceberg-go's catalog conformance suite through
// iceberg-go's REST client against the server. Nothing is skipped: the
// suite's namespaces (with properties) and tables are all served.
func TestConformance(t *testing.T) {
	catalogtest.RunCatalogTests(t, catalogtest.Config{
		NewCatalog: func(t *testing.T) icecat.Catalog {
			_, url := serve(t, t.TempDir(), restcatalog.Options{})
			return client(t, url)
		},
		SupportsNamespaceProperties: true,
	})
}

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
)

func createTable(t *testing.T, cat icecat.Catalog, ident icetable.Identifier) {
	t.Helper()
	ctx := context.Background()
	if err := cat.CreateNamespace(ctx, icecat.NamespaceFromIdent(ident), nil); err != nil && !errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
		t.Fatalf("create namespace: %v", err)
	}
	if _, err := cat.CreateTable(ctx, ident, testSchema); err != nil {
		t.Fatalf("create table: %v", err)
	}
}

// metadataFiles lists the metadata.json files of a table on disk.
func metadataFiles(t *testing.T, dir string, ident icetable.Identifier) []string {
	t.Helper()
	ns := strings.Join(icecat.NamespaceFromIdent(ident), ".")
	got, err := filepath.Glob(filepath.Join(dir, "warehouse", ns+".db", icecat.TableNameFromIdent(ident), "metadata", "*.metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCommitRequirementFailed: a commit through REST whose
// assert-ref-snapshot-id does not hold gets 409 (iceberg-go's
// ErrCommitFailed) and commits nothing: the pointer, the snapshots and the
// metadata files on disk are as before.
func TestCommitRequirementFailed(t *testing.T) {
	dir := t.TempDir()
	emb, url := serve(t, dir, restcatalog.Options{})
	cl := client(t, url)
	ctx := context.Background()
	ident := icetable.Identifier{"db", "t"}
	createTable(t, cl, ident)
	tbl, err := cl.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.AddFiles(ctx, nil, iceberg.Properties{"writer": "first"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatalf("first commit: %v", err)
	}
	before, err := emb.MetadataLocation(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	files := metadataFiles(t, dir, ident)

	wrong := int64(12345)
	_, _, err = cl.CommitTable(ctx, ident,
		[]icetable.Requirement{icetable.AssertRefSnapshotID(icetable.MainBranch, &wrong)},
		[]icetable.Update{icetable.NewSetPropertiesUpdate(iceberg.Properties{"changed": "yes"})})
	if !errors.Is(err, icetable.ErrCommitFailed) {
		t.Fatalf("commit with a wrong assert-ref-snapshot-id: got %v, want ErrCommitFailed (409)", err)
	}
	after, err := emb.MetadataLocation(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("metadata pointer moved from %s to %s on a failed commit", before, after)
	}
	if got := metadataFiles(t, dir, ident); !slices.Equal(got, files) {
		t.Errorf("metadata files on disk: got %v, want %v (nothing written)", got, files)
	}
	cur, err := emb.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cur.Properties()["changed"]; ok || len(cur.Metadata().Snapshots()) != 1 {
		t.Errorf("after the failed commit: properties %v, %d snapshots; want unchanged, 1", cur.Properties(), len(cur.Metadata().Snapshots()))
	}
}

// TestRacingCommits: two REST clients commit from the same base, each
// pinned with assert-ref-snapshot-id; exactly one wins each round, the
// other gets ErrCommitFailed, and the table gains one snapshot per round.
func TestRacingCommits(t *testing.T) {
	dir := t.TempDir()
	emb, url := serve(t, dir, restcatalog.Options{})
	a, b := client(t, url), client(t, url)
	ctx := context.Background()
	ident := icetable.Identifier{"db", "t"}
	createTable(t, a, ident)
	for round := range 5 {
		txns := make([]*icetable.Transaction, 2)
		for i, c := range []*rest.Catalog{a, b} {
			base, err := c.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			txns[i] = base.NewTransaction()
			if err := txns[i].AssertRefSnapshotID(icetable.MainBranch); err != nil {
				t.Fatal(err)
			}
			if err := txns[i].AddFiles(ctx, nil, iceberg.Properties{"writer": string(rune('a' + i))}, false); err != nil {
				t.Fatal(err)
			}
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range txns {
			wg.Go(func() { _, errs[i] = txns[i].Commit(ctx) })
		}
		wg.Wait()
		failed := 0
		for _, err := range errs {
			if err != nil {
				if !errors.Is(err, icetable.ErrCommitFailed) {
					t.Fatalf("round %d: got %v, want ErrCommitFailed or nil", round, err)
				}
				failed++
			}
		}
		if failed != 1 {
			t.Fatalf("round %d: %d commits failed, want exactly 1 (errs %v)", round, failed, errs)
		}
		tbl, err := emb.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(tbl.Metadata().Snapshots()), round+1; got != want {
			t.Fatalf("round %d: %d snapshots, want %d", round, got, want)
		}
	}
}

// do sends a request to the server and returns the status, headers and
// body.
func do(t *testing.T, method, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// errorObject parses the spec's {"error": {"message", "type", "code"}}.
func errorObject(t *testing.T, body string) (typ string, code int, msg string) {
	t.Helper()
	var e struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == nil {
		t.Fatalf("not the spec's error object (%v): %s", err, body)
	}
	return e.Error.Type, e.Error.Code, e.Error.Message
}

// TestConfigAndErrors: /v1/config has defaults, overrides (with the
// prefix) and the endpoints; failures answer with the spec's error object
// and status; X-Iceberg-Access-Delegation is accepted.
func TestConfigAndErrors(t *testing.T) {
	_, url := serve(t, t.TempDir(), restcatalog.Options{Prefix: "lh"})
	code, _, body := do(t, http.MethodGet, url+"/v1/config?warehouse=anything", "")
	var cfg struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
		Endpoints []string          `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(body), &cfg); err != nil || code != http.StatusOK {
		t.Fatalf("config: %d %s (%v)", code, body, err)
	}
	if cfg.Defaults == nil || cfg.Overrides["prefix"] != "lh" || !slices.Contains(cfg.Endpoints, "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}") {
		t.Errorf("config: got %s, want defaults, overrides with prefix lh and the commit endpoint", body)
	}

	cases := []struct {
		name, method, path, body string
		code                     int
		typ                      string
	}{
		{"missing table", http.MethodGet, "/v1/lh/namespaces/db/tables/none", "", 404, "NoSuchTableException"},
		{"missing namespace", http.MethodGet, "/v1/lh/namespaces/none", "", 404, "NoSuchNamespaceException"},
		{"malformed JSON", http.MethodPost, "/v1/lh/namespaces", "{not json", 400, "BadRequestException"},
		{"empty namespace level", http.MethodPost, "/v1/lh/namespaces", `{"namespace":["a",""]}`, 400, "BadRequestException"},
		{"unknown endpoint", http.MethodGet, "/v1/lh/views", "", 404, "NotFoundException"},
		{"other prefix", http.MethodGet, "/v1/other/namespaces", "", 404, "NotFoundException"},
		{"purge of a missing table", http.MethodDelete, "/v1/lh/namespaces/db/tables/t?purgeRequested=true", "", 404, "NoSuchTableException"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, body := do(t, c.method, url+c.path, c.body, "X-Iceberg-Access-Delegation", "vended-credentials")
			typ, inner, _ := errorObject(t, body)
			if code != c.code || inner != c.code || typ != c.typ {
				t.Errorf("%s %s: got %d (%s, code %d), want %d %s", c.method, c.path, code, typ, inner, c.code, c.typ)
			}
		})
	}
}

// TestLoadTableETag: a load carries an ETag; If-None-Match with it is 304
// without a body until a commit moves the table, then 200 with a new tag.
func TestLoadTableETag(t *testing.T) {
	_, url := serve(t, t.TempDir(), restcatalog.Options{})
	cl := client(t, url)
	ctx := context.Background()
	ident := icetable.Identifier{"db", "t"}
	createTable(t, cl, ident)
	path := url + "/v1/" + restcatalog.DefaultPrefix + "/namespaces/db/tables/t"
	code, h, body := do(t, http.MethodGet, path, "")
	tag := h.Get("ETag")
	if code != http.StatusOK || tag == "" || !strings.Contains(body, `"metadata-location"`) || !strings.Contains(body, `"config"`) {
		t.Fatalf("load: %d, ETag %q, body %.200s", code, tag, body)
	}
	if code, _, body := do(t, http.MethodGet, path, "", "If-None-Match", tag); code != http.StatusNotModified || body != "" {
		t.Errorf("load with If-None-Match %s: got %d %q, want 304 and no body", tag, code, body)
	}
	tbl, err := cl.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	code, h, _ = do(t, http.MethodGet, path, "", "If-None-Match", tag)
	if code != http.StatusOK || h.Get("ETag") == tag {
		t.Errorf("load after a commit with the old tag: got %d, ETag %q; want 200 and a new tag", code, h.Get("ETag"))
	}
}

// prefixGuard refuses table locations under reserved (ErrReserved).
type prefixGuard struct{ reserved string }

func (g prefixGuard) CheckTable(ident icetable.Identifier, meta icetable.Metadata) error {
	if ident[0] != "bronze" && strings.HasPrefix(meta.Location(), g.reserved) {
		return fmt.Errorf("%w: %w: location %s", catalog.ErrLocation, catalog.ErrReserved, meta.Location())
	}
	return nil
}

func (prefixGuard) CheckNamespace(icetable.Identifier, iceberg.Properties) error { return nil }

func (prefixGuard) CheckDelete(icetable.Identifier, icetable.Metadata, string) error { return nil }

// TestReadOnlyNamespaces: tables of a namespace Options.ReadOnly protects
// load through REST but every change is 403 ForbiddenException and changes
// nothing, a table of another namespace cannot be created at a location
// the catalog's guard reserves (403); other namespaces stay writable.
func TestReadOnlyNamespaces(t *testing.T) {
	dir := t.TempDir()
	reserved := filepath.Join(dir, "warehouse", "bronze.db")
	emb, url := serveGuarded(t, dir, prefixGuard{reserved}, restcatalog.Options{ReadOnly: func(ns icetable.Identifier) bool {
		return len(ns) == 1 && ns[0] == "bronze"
	}})
	ctx := context.Background()
	ident := icetable.Identifier{"bronze", "recentchange"}
	createTable(t, emb, ident) // in process, as the appliance does
	before, err := emb.MetadataLocation(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	cl := client(t, url)
	tbl, err := cl.LoadTable(ctx, ident)
	if err != nil {
		t.Fatalf("load a read-only table: %v", err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); !errors.Is(err, rest.ErrForbidden) {
		t.Errorf("commit to a read-only table: got %v, want 403 (rest.ErrForbidden)", err)
	}
	if err := cl.CreateNamespace(ctx, icetable.Identifier{"mine"}, nil); err != nil {
		t.Fatal(err)
	}
	base := url + "/v1/" + restcatalog.DefaultPrefix
	changes := []struct{ method, path, body string }{
		{http.MethodPost, "/namespaces/bronze/tables", `{"name":"x","schema":{"type":"struct","schema-id":0,"fields":[]}}`},
		{http.MethodDelete, "/namespaces/bronze/tables/recentchange", ""},
		{http.MethodDelete, "/namespaces/bronze", ""},
		{http.MethodPost, "/namespaces/bronze/properties", `{"updates":{"k":"v"}}`},
		{http.MethodPost, "/namespaces", `{"namespace":["bronze","sub"]}`},
		{http.MethodPost, "/tables/rename", `{"source":{"namespace":["bronze"],"name":"recentchange"},"destination":{"namespace":["bronze"],"name":"moved"}}`},
		{http.MethodPost, "/namespaces/mine/tables", `{"name":"x","location":"` + reserved + `/recentchange","schema":{"type":"struct","schema-id":0,"fields":[]}}`},
	}
	for _, c := range changes {
		code, _, body := do(t, c.method, base+c.path, c.body)
		if typ, _, _ := errorObject(t, body); code != http.StatusForbidden || typ != "ForbiddenException" {
			t.Errorf("%s %s: got %d %s, want 403 ForbiddenException", c.method, c.path, code, typ)
		}
	}
	if after, err := emb.MetadataLocation(ctx, ident); err != nil || after != before {
		t.Errorf("read-only table moved: %s -> %s (%v)", before, after, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "warehouse", "bronze.db", "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused create left files: %v", err)
	}
	createTable(t, cl, icetable.Identifier{"mine", "t"}) // other namespaces are the client's
}

// TestStagedCreate: a staged create (stage-create, then a commit asserting
// the table does not exist) creates the table with the staged updates; the
// staging alone writes nothing; a commit to a missing table without
// assert-create is 404 and creates nothing.
func TestStagedCreate(t *testing.T) {
	dir := t.TempDir()
	emb, url := serve(t, dir, restcatalog.Options{})
	cl := client(t, url)
	ctx := context.Background()
	if err := cl.CreateNamespace(ctx, icetable.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	base := url + "/v1/" + restcatalog.DefaultPrefix + "/namespaces/db/tables"
	code, _, body := do(t, http.MethodPost, base, `{"name":"staged","stage-create":true,"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`)
	if code != http.StatusOK || strings.Contains(body, `"metadata-location"`) {
		t.Fatalf("stage-create: got %d %.200s, want 200 without a metadata-location", code, body)
	}
	if ok, err := emb.CheckTableExists(ctx, icetable.Identifier{"db", "staged"}); err != nil || ok {
		t.Errorf("after staging alone: exists %v (%v), want no table", ok, err)
	}
	if got := metadataFiles(t, dir, icetable.Identifier{"db", "staged"}); len(got) != 0 {
		t.Errorf("staging alone wrote %v", got)
	}

	ident := icetable.Identifier{"db", "t"}
	if _, err := cl.CreateTable(ctx, ident, testSchema,
		icecat.WithStagedUpdates(icetable.NewSetPropertiesUpdate(iceberg.Properties{"staged": "yes"}))); err != nil {
		t.Fatalf("staged create: %v", err)
	}
	tbl, err := emb.LoadTable(ctx, ident)
	if err != nil {
		t.Fatalf("load the staged table: %v", err)
	}
	if tbl.Properties()["staged"] != "yes" || len(metadataFiles(t, dir, ident)) != 1 {
		t.Errorf("staged table: properties %v, metadata files %v", tbl.Properties(), metadataFiles(t, dir, ident))
	}

	missing := icetable.Identifier{"db", "missing"}
	_, _, err = cl.CommitTable(ctx, missing, nil, []icetable.Update{icetable.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})})
	if !errors.Is(err, icecat.ErrNoSuchTable) {
		t.Errorf("commit to a missing table without assert-create: got %v, want ErrNoSuchTable (404)", err)
	}
	if ok, _ := emb.CheckTableExists(ctx, missing); ok {
		t.Error("a commit without assert-create created a table")
	}
}

// TestRequestBounds: a table name or namespace that cannot be a directory
// name (too long, a slash, . or .., a control character) and a body over
// its bound are 400 BadRequestException naming the bound, never 500, and
// create nothing; a fifth request with a body waits while four are being
// read.
func TestRequestBounds(t *testing.T) {
	dir := t.TempDir()
	emb, err := catalog.Open(context.Background(), filepath.Join(dir, "catalog.db"), catalog.Options{
		Props: iceberg.Properties{"warehouse": filepath.Join(dir, "warehouse")},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	rc := restcatalog.New(emb, restcatalog.Options{})
	srv := httptest.NewServer(rc)
	defer srv.Close()
	url := srv.URL
	base := url + "/v1/" + restcatalog.DefaultPrefix
	ctx := context.Background()
	if err := emb.CreateNamespace(ctx, icetable.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"struct","schema-id":0,"fields":[]}`
	long := strings.Repeat("n", 300)
	cases := []struct {
		name, method, path, body, says string
	}{
		{"300-byte table name", http.MethodPost, "/namespaces/db/tables", `{"name":"` + long + `","schema":` + schema + `}`, "table name of 300 bytes"},
		{"table name with a slash", http.MethodPost, "/namespaces/db/tables", `{"name":"a/b","schema":` + schema + `}`, "slash"},
		{"table name ..", http.MethodPost, "/namespaces/db/tables", `{"name":"..","schema":` + schema + `}`, ". and .."},
		{"10 KB namespace", http.MethodPost, "/namespaces", `{"namespace":["` + strings.Repeat("x", 10<<10) + `"]}`, "namespace of 10240 bytes"},
		{"long namespace in the path", http.MethodGet, "/namespaces/" + strings.Repeat("x", 3000), "", "namespace of 3000 bytes"},
		{"control character", http.MethodPost, "/namespaces", `{"namespace":["a\u0001b"]}`, "control character"},
		{"empty level", http.MethodPost, "/namespaces", `{"namespace":["a",""]}`, "empty"},
		{"2 MB namespace body", http.MethodPost, "/namespaces", `{"namespace":["big"],"properties":{"k":"` + strings.Repeat("v", 2<<20) + `"}}`, "request body over 1048576 bytes"},
		{"9 MB commit", http.MethodPost, "/namespaces/db/tables/t", `{"requirements":[],"updates":[` + strings.Repeat(`{"action":"remove-properties","removals":["k"]},`, 200_000) + `{}]}`, "request body over 8388608 bytes"},
		{"rename to a long name", http.MethodPost, "/tables/rename", `{"source":{"namespace":["db"],"name":"t"},"destination":{"namespace":["db"],"name":"` + long + `"}}`, "table name of 300 bytes"},
	}
	for _, c := range cases {
		code, _, body := do(t, c.method, base+c.path, c.body)
		if c.method == http.MethodGet && code == http.StatusBadRequest {
			continue // a GET's error body is checked below
		}
		typ, inner, msg := errorObject(t, body)
		if code != http.StatusBadRequest || inner != code || typ != "BadRequestException" || !strings.Contains(msg, c.says) {
			t.Errorf("%s: got %d %s %q, want 400 BadRequestException saying %q", c.name, code, typ, msg, c.says)
		}
	}
	if code, _, body := do(t, http.MethodGet, base+"/namespaces/"+strings.Repeat("x", 3000), ""); code != http.StatusBadRequest || !strings.Contains(body, "at most 252") {
		t.Errorf("a 3000-byte namespace in the path: %d %.200s", code, body)
	}
	nss, err := emb.ListNamespaces(ctx, nil)
	if err != nil || len(nss) != 1 {
		t.Errorf("namespaces after refused requests: %v (%v), want db alone", nss, err)
	}

	// Four requests hold the writers' turns while their bodies trickle in;
	// a fifth, whole, is answered only after one of them ends.
	host := strings.TrimPrefix(url, "http://")
	var held []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/%s/namespaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n{", restcatalog.DefaultPrefix)
		held = append(held, c)
	}
	deadline := time.Now().Add(time.Minute)
	for restcatalog.WritersBusy(rc) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("inconclusive: %d of the four requests are being served after a minute", restcatalog.WritersBusy(rc))
		}
		time.Sleep(10 * time.Millisecond)
	}
	done := make(chan int, 1)
	go func() {
		code, _, _ := do(t, http.MethodPost, base+"/namespaces", `{"namespace":["fifth"]}`)
		done <- code
	}()
	select {
	case code := <-done:
		t.Fatalf("the fifth request was answered (%d) while four bodies were being read", code)
	case <-time.After(500 * time.Millisecond):
	}
	fmt.Fprint(held[0], `"namespace":["first"]}        `)
	select {
	case code := <-done:
		if code != http.StatusOK {
			t.Errorf("the fifth request: %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the fifth request was not answered after one of the four ended")
	}
}

// noStager hides the embedded catalog's StageTable.
type noStager struct{ icecat.Catalog }

// TestStatusesTheOperationAllows: an error whose status the spec does not
// allow the operation (406 for a create) is 400 with the same type; a 422
// where the operation allows it stays 422.
func TestStatusesTheOperationAllows(t *testing.T) {
	dir := t.TempDir()
	emb, _ := serve(t, dir, restcatalog.Options{})
	srv := httptest.NewServer(restcatalog.New(noStager{emb}, restcatalog.Options{}))
	defer srv.Close()
	base := srv.URL + "/v1/" + restcatalog.DefaultPrefix
	if err := emb.CreateNamespace(context.Background(), icetable.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	code, _, body := do(t, http.MethodPost, base+"/namespaces/db/tables", `{"name":"s","stage-create":true,"schema":{"type":"struct","schema-id":0,"fields":[]}}`)
	if typ, inner, _ := errorObject(t, body); code != http.StatusBadRequest || inner != 400 || typ != "UnsupportedOperationException" {
		t.Errorf("stage-create on a catalog that cannot stage: %d %s %d, want 400 UnsupportedOperationException (createTable allows no 406)", code, typ, inner)
	}
	code, _, body = do(t, http.MethodPost, base+"/namespaces/db/properties", `{"updates":{"k":"v"},"removals":["k"]}`)
	if typ, inner, _ := errorObject(t, body); code != http.StatusUnprocessableEntity || inner != 422 || typ != "UnprocessableEntityException" {
		t.Errorf("a key both removed and updated: %d %s %d, want 422", code, typ, inner)
	}
}
