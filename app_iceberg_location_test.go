package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/dashboard"
	"lakehouse/internal/health"
	"lakehouse/internal/localapi"
	"lakehouse/table"
)

const restSchema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}`

// restCall sends one request to the appliance's Iceberg REST catalog and
// returns the status and body.
func (a *testAppliance) restCall(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, a.base+localapi.IcebergPath+"/v1/lakehouse"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// specError parses the spec's {"error": {"message", "type", "code"}}.
func specError(body string) (typ, msg string, code int, ok bool) {
	var e struct {
		Error *struct {
			Message *string `json:"message"`
			Type    *string `json:"type"`
			Code    *int    `json:"code"`
		} `json:"error"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if dec.Decode(&e) != nil || e.Error == nil || e.Error.Message == nil || e.Error.Type == nil || e.Error.Code == nil {
		return "", "", 0, false
	}
	return *e.Error.Type, *e.Error.Message, *e.Error.Code, true
}

// dirState lists every file under wh's dirs with its size and time.
func dirState(t *testing.T, wh string, dirs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(wh, d), func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			st, err := e.Info()
			if err == nil {
				fmt.Fprintf(&b, "%s %d %s\n", p, st.Size(), st.ModTime())
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestRESTLocationSpellingsRefused: on a running appliance, a REST client
// sets every spelling of bronze's and silver's directories seen in a probe
// (URIs with and without a host, dot segments, doubled slashes, percent
// escapes, the warehouse itself), and a location under a second warehouse
// root, as a create's location, a staged create's, a namespace's location
// (at create and by update), a set-location commit, a staged create
// committed with assert-create plus set-location, and write.data.path:
// each is 400 or 403 with the spec's error object naming the field, the
// catalog and bronze's and silver's directories are unchanged, and the
// appliance restarts on the data directory with no odd entry.
func TestRESTLocationSpellingsRefused(t *testing.T) {
	dir := t.TempDir()
	src := replay.New(replay.Config{Seed: 31, Restamp: true, ResumeAfter: true})
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	src.Loops(replay.Generate(31, 200), 1)
	a := startApplianceAt(t, src, url, func(f *appliance.Config, _ *health.Rules) { f.Data, f.Refresh = dir, 0 })
	a.drained(t, src.Counts().OnTime)
	wh := a.p.Lake().Warehouse()
	ok := func(method, path, body string) {
		t.Helper()
		if code, out := a.restCall(t, method, path, body); code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, code, out)
		}
	}
	ok(http.MethodPost, "/namespaces", `{"namespace":["client"]}`)
	ok(http.MethodPost, "/namespaces/client/tables", `{"name":"ok","schema":`+restSchema+`}`)
	ok(http.MethodPost, "/namespaces", `{"namespace":["dos"]}`)
	before := dirState(t, wh, "bronze.db", "silver.db")
	if before == "" {
		t.Fatal("inconclusive: bronze and silver hold no files")
	}
	_, tablesBefore := a.restCall(t, http.MethodGet, "/namespaces/client/tables", "")
	_, nsBefore := a.restCall(t, http.MethodGet, "/namespaces/client", "")

	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	spellings := []string{
		wh + "/bronze.db/recentchange",
		"file://" + wh + "/bronze.db/recentchange",
		"file://localhost" + wh + "/bronze.db/recentchange",
		"file:" + wh + "/bronze.db/recentchange",
		wh + "/x/../bronze.db/recentchange",
		wh + "//bronze.db/recentchange",
		wh + "/./bronze.db/recentchange",
		"file://" + wh + "/y/../silver.db/edits",
		"file://" + wh + "/%62ronze.db/recentchange",
		wh + "/%62ronze.db/recentchange",
		wh + "/bronze.db",
		wh,
		"file://" + wh + "/",
		wh + "/silver.db/edits/metadata",
	}
	refused := 0
	check := func(what, field, method, path, body string) {
		t.Helper()
		code, out := a.restCall(t, method, path, body)
		typ, msg, inner, isErr := specError(out)
		switch {
		case code != http.StatusBadRequest && code != http.StatusForbidden:
			t.Errorf("%s: %d %.300s, want 400 or 403", what, code, out)
		case !isErr || inner != code:
			t.Errorf("%s: %d with %.300s, not the spec's error object with code %d", what, code, out, code)
		case code == http.StatusForbidden && typ != "ForbiddenException", code == http.StatusBadRequest && typ != "BadRequestException":
			t.Errorf("%s: %d %s", what, code, typ)
		case !strings.Contains(msg, field):
			t.Errorf("%s: the message does not name %s: %s", what, field, msg)
		default:
			refused++
		}
	}
	for i, loc := range spellings {
		n := fmt.Sprintf("t%d", i)
		check("create at "+loc, "location", http.MethodPost, "/namespaces/client/tables",
			`{"name":"`+n+`","location":`+q(loc)+`,"schema":`+restSchema+`}`)
		check("staged create at "+loc, "location", http.MethodPost, "/namespaces/client/tables",
			`{"name":"`+n+`s","stage-create":true,"location":`+q(loc)+`,"schema":`+restSchema+`}`)
		check("assert-create + set-location "+loc, "location", http.MethodPost, "/namespaces/client/tables/"+n+"c",
			`{"requirements":[{"type":"assert-create"}],"updates":[{"action":"set-location","location":`+q(loc)+`}]}`)
		check("namespace location "+loc, "location", http.MethodPost, "/namespaces",
			`{"namespace":["n`+n+`"],"properties":{"location":`+q(loc)+`}}`)
		check("namespace location update "+loc, "location", http.MethodPost, "/namespaces/client/properties",
			`{"updates":{"location":`+q(loc)+`}}`)
		check("set-location "+loc, "location", http.MethodPost, "/namespaces/client/tables/ok",
			`{"requirements":[],"updates":[{"action":"set-location","location":`+q(loc)+`}]}`)
		if strings.Contains(loc, ".db") {
			check("write.data.path "+loc, "write.data.path", http.MethodPost, "/namespaces/client/tables/ok",
				`{"requirements":[],"updates":[{"action":"set-properties","updates":{"write.data.path":`+q(loc)+`}}]}`)
		}
	}
	check("a second root", "location", http.MethodPost, "/namespaces/dos/tables",
		`{"name":"t","location":`+q(wh+"/sub/dos.db/t")+`,"schema":`+restSchema+`}`)
	check("outside the warehouse", "location", http.MethodPost, "/namespaces/client/tables",
		`{"name":"out","location":`+q(filepath.Dir(wh)+"/elsewhere")+`,"schema":`+restSchema+`}`)
	t.Logf("%d requests refused", refused)

	if after := dirState(t, wh, "bronze.db", "silver.db"); after != before {
		t.Errorf("refused requests changed bronze's or silver's directories")
	}
	if _, got := a.restCall(t, http.MethodGet, "/namespaces/client/tables", ""); got != tablesBefore {
		t.Errorf("client tables: %s, before %s", got, tablesBefore)
	}
	if _, got := a.restCall(t, http.MethodGet, "/namespaces/client", ""); got != nsBefore {
		t.Errorf("client namespace: %s, before %s", got, nsBefore)
	}
	a.stop()

	b := startApplianceAt(t, src, url, func(f *appliance.Config, _ *health.Rules) { f.Data, f.Refresh = dir, 0 })
	defer b.stop()
	if odd, err := b.p.Lake().OddTables(context.Background()); err != nil || len(odd) != 0 {
		t.Errorf("after the restart: odd tables %v (%v)", odd, err)
	}
}

// TestOddCatalogEntriesDoNotBrick: a catalog.db holding what requests
// before the location rule could leave (a client table at a default
// location under a second warehouse root, which made every command exit 1,
// and a client table whose metadata is in bronze's directory) opens: the
// appliance runs, its streams commit the events that arrive, /readyz (200,
// ready, with a warning line each) and `status` name both entries; a client drops one through REST; the
// offline `catalog` command lists the other, refuses to drop a table the
// appliance accepts, drops it; the next start lists none.
func TestOddCatalogEntriesDoNotBrick(t *testing.T) {
	dir := t.TempDir()
	src := replay.New(replay.Config{Seed: 33, Restamp: true, ResumeAfter: true})
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	src.Loops(replay.Generate(33, 200), 1)
	onData := func(f *appliance.Config, _ *health.Rules) { f.Data, f.Refresh = dir, 0 }
	a := startApplianceAt(t, src, url, onData)
	a.drained(t, src.Counts().OnTime)
	wh := a.p.Lake().Warehouse()
	a.stop()

	db, err := bolt.Open(filepath.Join(dir, "catalog.db"), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, ns := range []string{"dos", "client"} {
			if err := tx.Bucket([]byte("namespaces")).Put([]byte(ns), []byte(`{}`)); err != nil {
				return err
			}
		}
		tb := tx.Bucket([]byte("tables"))
		if err := tb.Put([]byte("dos\x00t"), []byte(`{"metadata-location":"`+wh+`/sub/dos.db/t/metadata/00000-x.metadata.json"}`)); err != nil {
			return err
		}
		return tb.Put([]byte("client\x00x"), []byte(`{"metadata-location":"`+wh+`/bronze.db/recentchange/metadata/00001-x.metadata.json"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	src.Loops(replay.Generate(34, 150), 1)
	b := startApplianceAt(t, src, url, onData)
	b.drained(t, src.Counts().OnTime)
	waitFor(t, time.Minute, "/readyz to name both entries", func() bool {
		code, body := b.get(t, "/readyz")
		return code == http.StatusOK && strings.HasPrefix(body, "ready\n") &&
			strings.Contains(body, "warning: catalog: client table client.x") && strings.Contains(body, "warning: catalog: client table dos.t")
	})
	var out bytes.Buffer
	dashboard.WriteText(&out, b.observation(t))
	if !strings.Contains(out.String(), "client.x") || !strings.Contains(out.String(), "dos.t") || len(b.observation(t).OddTables) != 2 {
		t.Errorf("status does not name both odd entries:\n%s", out.String())
	}
	if code, body := b.restCall(t, http.MethodDelete, "/namespaces/dos/tables/t", ""); code != http.StatusNoContent {
		t.Errorf("drop the odd dos.t through REST: %d %s", code, body)
	}
	b.stop()

	catalogCmd := func(args ...string) (int, string) {
		var o bytes.Buffer
		code := run(append([]string{"catalog", "--data", dir}, args...), &o, &o)
		return code, o.String()
	}
	if code, text := catalogCmd(); code != 0 || !strings.Contains(text, "client.x") || strings.Contains(text, "dos.t") {
		t.Fatalf("catalog: exit %d:\n%s", code, text)
	}
	if code, text := catalogCmd("--drop", table.Bronze); code != 1 || !strings.Contains(text, "not an odd table") {
		t.Errorf("catalog --drop %s: exit %d:\n%s", table.Bronze, code, text)
	}
	if code, text := catalogCmd("--drop", "client.x"); code != 0 || !strings.Contains(text, "dropped client.x") || !strings.Contains(text, "no odd entries") {
		t.Fatalf("catalog --drop client.x: exit %d:\n%s", code, text)
	}

	c := startApplianceAt(t, src, url, onData)
	defer c.stop()
	if odd := c.observation(t).OddTables; len(odd) != 0 {
		t.Errorf("after dropping: odd tables %v", odd)
	}
	tables, err := c.p.Lake().Tables(context.Background())
	if err != nil || slices.Contains(tables, "client.x") || !slices.Contains(tables, table.Bronze) {
		t.Errorf("tables after the drops: %v (%v)", tables, err)
	}
}
