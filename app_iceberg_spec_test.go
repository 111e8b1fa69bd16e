package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/health"
	"lakehouse/internal/localapi"
)

// What the Apache Iceberg REST catalog OpenAPI definition
// (open-api/rest-catalog-open-api.yaml) requires of the responses of the
// operations the appliance serves, written down as test expectations: per
// operation the statuses it may answer and the shape each one's body
// must have. A shape checks required fields, the types of the fields it
// names, and, where the definition closes an object, that nothing else is
// there.

// shape checks a decoded JSON value; at names it in errors.
type shape func(at string, v any) error

type field struct {
	required bool
	s        shape
}

func req(s shape) field { return field{true, s} }
func opt(s shape) field { return field{false, s} }

// obj is an object with fields; closed refuses any other member.
func obj(closed bool, fields map[string]field) shape {
	return func(at string, v any) error {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an object", at, v)
		}
		for name, f := range fields {
			fv, present := m[name]
			if !present {
				if f.required {
					return fmt.Errorf("%s: no %q", at, name)
				}
				continue
			}
			if err := f.s(at+"."+name, fv); err != nil {
				return err
			}
		}
		if closed {
			for name := range m {
				if _, ok := fields[name]; !ok {
					return fmt.Errorf("%s: %q is not allowed here", at, name)
				}
			}
		}
		return nil
	}
}

func str(at string, v any) error {
	if _, ok := v.(string); !ok {
		return fmt.Errorf("%s: %T, want a string", at, v)
	}
	return nil
}

func integer(lo, hi float64) shape {
	return func(at string, v any) error {
		f, ok := v.(float64)
		if !ok || f != math.Trunc(f) || f < lo || f > hi {
			return fmt.Errorf("%s: %v, want an integer in [%v, %v]", at, v, lo, hi)
		}
		return nil
	}
}

var anyInt = integer(math.MinInt64, math.MaxInt64)

func arrayOf(item shape, unique bool) shape {
	return func(at string, v any) error {
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an array", at, v)
		}
		seen := map[string]bool{}
		for i, e := range a {
			if err := item(fmt.Sprintf("%s[%d]", at, i), e); err != nil {
				return err
			}
			if unique {
				k, _ := json.Marshal(e)
				if seen[string(k)] {
					return fmt.Errorf("%s: %s twice, want unique items", at, k)
				}
				seen[string(k)] = true
			}
		}
		return nil
	}
}

// mapOf is an object whose every member has shape s.
func mapOf(s shape) shape {
	return func(at string, v any) error {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an object", at, v)
		}
		for k, e := range m {
			if err := s(at+"."+k, e); err != nil {
				return err
			}
		}
		return nil
	}
}

func nullable(s shape) shape {
	return func(at string, v any) error {
		if v == nil {
			return nil
		}
		return s(at, v)
	}
}

func oneOf(vals ...string) shape {
	return func(at string, v any) error {
		if s, ok := v.(string); !ok || !slices.Contains(vals, s) {
			return fmt.Errorf("%s: %v, want one of %v", at, v, vals)
		}
		return nil
	}
}

var anyObject = mapOf(func(string, any) error { return nil })

var (
	errorModel = obj(false, map[string]field{
		"message": req(str), "type": req(str), "code": req(integer(400, 600)), "stack": opt(arrayOf(str, false)),
	})
	icebergError = obj(true, map[string]field{"error": req(errorModel)})
	oauthError   = obj(false, map[string]field{
		"error":             req(oneOf("invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope")),
		"error_description": opt(str), "error_uri": opt(str),
	})
	namespace      = arrayOf(str, false)
	catalogConfig  = obj(false, map[string]field{"defaults": req(mapOf(str)), "overrides": req(mapOf(str)), "endpoints": opt(arrayOf(str, false))})
	listNamespaces = obj(false, map[string]field{"namespaces": opt(arrayOf(namespace, true)), "next-page-token": opt(nullable(str))})
	createNS       = obj(false, map[string]field{"namespace": req(namespace), "properties": opt(mapOf(str))})
	getNS          = obj(false, map[string]field{"namespace": req(namespace), "properties": opt(nullable(mapOf(str)))})
	updateNS       = obj(false, map[string]field{"updated": req(arrayOf(str, true)), "removed": req(arrayOf(str, false)), "missing": opt(nullable(arrayOf(str, false)))})
	tableIdent     = obj(false, map[string]field{"namespace": req(namespace), "name": req(str)})
	listTables     = obj(false, map[string]field{"identifiers": opt(arrayOf(tableIdent, true)), "next-page-token": opt(nullable(str))})
	tableMetadata  = obj(false, map[string]field{
		"format-version": req(integer(1, 3)), "table-uuid": req(str), "location": opt(str), "last-updated-ms": opt(anyInt),
		"properties": opt(mapOf(str)), "schemas": opt(arrayOf(anyObject, false)), "current-schema-id": opt(anyInt),
		"last-column-id": opt(anyInt), "partition-specs": opt(arrayOf(anyObject, false)), "default-spec-id": opt(anyInt),
		"sort-orders": opt(arrayOf(anyObject, false)), "default-sort-order-id": opt(anyInt), "snapshots": opt(arrayOf(anyObject, false)),
		"current-snapshot-id": opt(anyInt), "last-sequence-number": opt(anyInt),
	})
	loadTable   = obj(false, map[string]field{"metadata": req(tableMetadata), "metadata-location": opt(nullable(str)), "config": opt(mapOf(str)), "storage-credentials": opt(arrayOf(anyObject, false))})
	commitTable = obj(false, map[string]field{"metadata-location": req(str), "metadata": req(tableMetadata)})
	noBody      shape // 204, 304 and HEAD answers carry none
)

// specOp is one operation: what it answers on success and on error.
type specOp struct {
	ok    map[int]shape // success statuses
	extra []int         // error statuses beyond 400, 401, 403, 404, 419, 503, 5XX
	err   shape         // the error body (icebergError; oauthError for the token endpoint)
}

var specOps = map[string]specOp{
	"GET /v1/config":                                            {ok: map[int]shape{200: catalogConfig}, err: icebergError},
	"GET /v1/{prefix}/namespaces":                               {ok: map[int]shape{200: listNamespaces}, err: icebergError},
	"POST /v1/{prefix}/namespaces":                              {ok: map[int]shape{200: createNS}, extra: []int{406, 409}, err: icebergError},
	"GET /v1/{prefix}/namespaces/{namespace}":                   {ok: map[int]shape{200: getNS}, err: icebergError},
	"HEAD /v1/{prefix}/namespaces/{namespace}":                  {ok: map[int]shape{204: noBody}, err: noBody},
	"DELETE /v1/{prefix}/namespaces/{namespace}":                {ok: map[int]shape{204: noBody}, extra: []int{409}, err: icebergError},
	"POST /v1/{prefix}/namespaces/{namespace}/properties":       {ok: map[int]shape{200: updateNS}, extra: []int{406, 422}, err: icebergError},
	"GET /v1/{prefix}/namespaces/{namespace}/tables":            {ok: map[int]shape{200: listTables}, err: icebergError},
	"POST /v1/{prefix}/namespaces/{namespace}/tables":           {ok: map[int]shape{200: loadTable}, extra: []int{409}, err: icebergError},
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}":    {ok: map[int]shape{200: loadTable, 304: noBody}, err: icebergError},
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}":   {ok: map[int]shape{204: noBody}, err: noBody},
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}":   {ok: map[int]shape{200: commitTable}, extra: []int{409}, err: icebergError},
	"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}": {ok: map[int]shape{204: noBody}, err: icebergError},
	"POST /v1/{prefix}/tables/rename":                           {ok: map[int]shape{204: noBody}, extra: []int{406, 409}, err: icebergError},
	"POST /v1/oauth/tokens":                                     {ok: map[int]shape{200: anyObject}, err: oauthError},
}

// allowed reports whether op may answer code, and the body's shape.
func (op specOp) allowed(code int) (shape, bool) {
	if s, ok := op.ok[code]; ok {
		return s, true
	}
	if code >= 500 || slices.Contains([]int{400, 401, 403, 404, 419, 503}, code) || slices.Contains(op.extra, code) {
		if op.err == nil {
			return nil, true
		}
		return op.err, true
	}
	return nil, false
}

// oauthAllowed: the token endpoint allows 200, 400, 401 and 5XX alone.
func oauthAllowed(code int) bool { return code == 200 || code == 400 || code == 401 || code >= 500 }

// TestRESTSpecConformance: every operation the appliance's Iceberg REST
// catalog serves (every endpoint /v1/config lists, plus the config and the
// token endpoint), driven to each outcome it has (success, 304, 400, 401
// without the token, 403 on the appliance's namespaces and directories,
// 404, 409, 422, a purge), answers only statuses the spec allows that
// operation, with the body the spec requires for that status (the error
// object closed, its code the status; the OAuthError at the token
// endpoint; no body for 204, 304 and HEAD); a purge deletes the client
// table's files.
func TestRESTSpecConformance(t *testing.T) {
	src := replay.New(replay.Config{Seed: 47, Restamp: true})
	src.Loops(replay.Generate(47, 200), 1)
	a := startAppliance(t, src, func(f *appliance.Config, _ *health.Rules) { f.HTTPToken, f.Refresh = "s3cret", 0 })
	a.drained(t, src.Counts().OnTime)
	wh := a.p.Lake().Warehouse()
	prefix := "lakehouse"
	covered := map[string]map[int]bool{}
	call := func(op string, path, body string, header ...string) (int, string) {
		t.Helper()
		spec, ok := specOps[op]
		if !ok {
			t.Fatalf("no expectations for %s", op)
		}
		method, _, _ := strings.Cut(op, " ")
		r, err := http.NewRequest(method, a.base+localapi.IcebergPath+strings.ReplaceAll(path, "{prefix}", prefix), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer s3cret")
		r.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			if header[i+1] == "" {
				r.Header.Del(header[i])
			} else {
				r.Header.Set(header[i], header[i+1])
			}
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatalf("%s %s: %v", op, path, err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		code := resp.StatusCode
		if covered[op] == nil {
			covered[op] = map[int]bool{}
		}
		covered[op][code] = true
		want, ok := spec.allowed(code)
		if op == "POST /v1/oauth/tokens" {
			ok = ok && oauthAllowed(code)
		}
		if !ok {
			t.Errorf("%s %s: %d, which the spec does not allow this operation (%.200s)", op, path, code, raw)
			return code, string(raw)
		}
		if want == nil || method == http.MethodHead {
			if len(raw) != 0 {
				t.Errorf("%s %s: %d with a body %.200q, want none", op, path, code, raw)
			}
			return code, string(raw)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s %s: %d with Content-Type %q, want JSON", op, path, code, ct)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Errorf("%s %s: %d with %.200q: %v", op, path, code, raw, err)
			return code, string(raw)
		}
		if err := want("body", v); err != nil {
			t.Errorf("%s %s: %d: %v in %.300s", op, path, code, err, raw)
		}
		if m, ok := v.(map[string]any); ok && code >= 400 && op != "POST /v1/oauth/tokens" {
			if e, ok := m["error"].(map[string]any); ok && e["code"] != float64(code) {
				t.Errorf("%s %s: status %d, error code %v", op, path, code, e["code"])
			}
		}
		return code, string(raw)
	}
	expect := func(want int) func(int, string) {
		return func(got int, body string) {
			t.Helper()
			if got != want {
				t.Errorf("got %d (%.200s), want %d", got, body, want)
			}
		}
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	const (
		cfg    = "GET /v1/config"
		token  = "POST /v1/oauth/tokens"
		lsNS   = "GET /v1/{prefix}/namespaces"
		mkNS   = "POST /v1/{prefix}/namespaces"
		getNS  = "GET /v1/{prefix}/namespaces/{namespace}"
		hasNS  = "HEAD /v1/{prefix}/namespaces/{namespace}"
		rmNS   = "DELETE /v1/{prefix}/namespaces/{namespace}"
		setNS  = "POST /v1/{prefix}/namespaces/{namespace}/properties"
		lsTab  = "GET /v1/{prefix}/namespaces/{namespace}/tables"
		mkTab  = "POST /v1/{prefix}/namespaces/{namespace}/tables"
		getTab = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"
		hasTab = "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}"
		commit = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"
		rmTab  = "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}"
		rename = "POST /v1/{prefix}/tables/rename"
	)
	newTable := `{"name":"t","schema":` + restSchema + `}`

	code, body := call(cfg, "/v1/config", "")
	expect(200)(code, body)
	var config struct{ Endpoints []string }
	_ = json.Unmarshal([]byte(body), &config)
	expect(401)(call(cfg, "/v1/config", "", "Authorization", ""))
	expect(200)(call(cfg, "/v1/config", "", "Authorization", "bearer s3cret"))

	form := "application/x-www-form-urlencoded"
	expect(400)(call(token, "/v1/oauth/tokens", "grant_type=client_credentials&client_id=a&client_secret=b", "Content-Type", form))
	expect(400)(call(token, "/v1/oauth/tokens", "", "Content-Type", form))
	expect(401)(call(token, "/v1/oauth/tokens", "grant_type=client_credentials", "Content-Type", form, "Authorization", ""))

	expect(200)(call(lsNS, "/v1/{prefix}/namespaces", ""))
	expect(404)(call(lsNS, "/v1/{prefix}/namespaces?parent=missing", ""))
	expect(400)(call(lsNS, "/v1/{prefix}/namespaces?parent="+url.QueryEscape("a/b"), ""))
	expect(401)(call(lsNS, "/v1/{prefix}/namespaces", "", "Authorization", "Bearer wrong"))

	expect(200)(call(mkNS, "/v1/{prefix}/namespaces", `{"namespace":["client"],"properties":{"owner":"me"}}`))
	expect(409)(call(mkNS, "/v1/{prefix}/namespaces", `{"namespace":["client"]}`))
	expect(400)(call(mkNS, "/v1/{prefix}/namespaces", `{not json`))
	expect(403)(call(mkNS, "/v1/{prefix}/namespaces", `{"namespace":["bronze","sub"]}`))
	expect(400)(call(mkNS, "/v1/{prefix}/namespaces", `{"namespace":["a/b"]}`))
	expect(403)(call(mkNS, "/v1/{prefix}/namespaces", `{"namespace":["other"],"properties":{"location":`+q(wh+"/silver.db")+`}}`))

	expect(200)(call(getNS, "/v1/{prefix}/namespaces/client", ""))
	expect(404)(call(getNS, "/v1/{prefix}/namespaces/missing", ""))
	expect(400)(call(getNS, "/v1/{prefix}/namespaces/a%2Fb", ""))
	expect(204)(call(hasNS, "/v1/{prefix}/namespaces/client", ""))
	expect(404)(call(hasNS, "/v1/{prefix}/namespaces/missing", ""))

	expect(200)(call(setNS, "/v1/{prefix}/namespaces/client/properties", `{"updates":{"k":"v"},"removals":["absent"]}`))
	expect(422)(call(setNS, "/v1/{prefix}/namespaces/client/properties", `{"updates":{"k":"v"},"removals":["k"]}`))
	expect(404)(call(setNS, "/v1/{prefix}/namespaces/missing/properties", `{"updates":{"k":"v"}}`))
	expect(403)(call(setNS, "/v1/{prefix}/namespaces/bronze/properties", `{"updates":{"k":"v"}}`))
	expect(400)(call(setNS, "/v1/{prefix}/namespaces/client/properties", `{"updates":{"k":"`+strings.Repeat("v", 20<<10)+`"}}`))

	expect(200)(call(lsTab, "/v1/{prefix}/namespaces/bronze/tables", ""))
	expect(404)(call(lsTab, "/v1/{prefix}/namespaces/missing/tables", ""))

	expect(200)(call(mkTab, "/v1/{prefix}/namespaces/client/tables", newTable))
	expect(409)(call(mkTab, "/v1/{prefix}/namespaces/client/tables", newTable))
	expect(200)(call(mkTab, "/v1/{prefix}/namespaces/client/tables", `{"name":"staged","stage-create":true,"schema":`+restSchema+`}`))
	expect(404)(call(mkTab, "/v1/{prefix}/namespaces/missing/tables", newTable))
	expect(403)(call(mkTab, "/v1/{prefix}/namespaces/bronze/tables", newTable))
	expect(403)(call(mkTab, "/v1/{prefix}/namespaces/client/tables", `{"name":"x","location":`+q(wh+"/bronze.db/x")+`,"schema":`+restSchema+`}`))
	expect(400)(call(mkTab, "/v1/{prefix}/namespaces/client/tables", `{"name":"x","location":"/etc/x","schema":`+restSchema+`}`))
	expect(400)(call(mkTab, "/v1/{prefix}/namespaces/client/tables", `{"name":"x"}`))

	code, body = call(getTab, "/v1/{prefix}/namespaces/client/tables/t", "")
	expect(200)(code, body)
	var loaded struct {
		Metadata struct {
			UUID     string `json:"table-uuid"`
			Location string `json:"location"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal([]byte(body), &loaded)
	r, _ := http.NewRequest(http.MethodGet, a.base+localapi.IcebergPath+"/v1/lakehouse/namespaces/client/tables/t", nil)
	r.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	expect(304)(call(getTab, "/v1/{prefix}/namespaces/client/tables/t", "", "If-None-Match", resp.Header.Get("ETag")))
	expect(200)(call(getTab, "/v1/{prefix}/namespaces/bronze/tables/recentchange", ""))
	expect(404)(call(getTab, "/v1/{prefix}/namespaces/client/tables/missing", ""))
	expect(204)(call(hasTab, "/v1/{prefix}/namespaces/client/tables/t", ""))
	expect(404)(call(hasTab, "/v1/{prefix}/namespaces/client/tables/missing", ""))

	expect(200)(call(commit, "/v1/{prefix}/namespaces/client/tables/t",
		`{"requirements":[{"type":"assert-table-uuid","uuid":`+q(loaded.Metadata.UUID)+`}],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`))
	expect(409)(call(commit, "/v1/{prefix}/namespaces/client/tables/t",
		`{"requirements":[{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000000"}],"updates":[{"action":"set-properties","updates":{"k":"w"}}]}`))
	expect(404)(call(commit, "/v1/{prefix}/namespaces/client/tables/missing", `{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`))
	expect(403)(call(commit, "/v1/{prefix}/namespaces/bronze/tables/recentchange", `{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`))
	expect(400)(call(commit, "/v1/{prefix}/namespaces/client/tables/t", `{"requirements":[],"updates":[{"action":"no-such-action"}]}`))
	expect(403)(call(commit, "/v1/{prefix}/namespaces/client/tables/t", `{"requirements":[],"updates":[{"action":"set-location","location":`+q(wh+"/silver.db/edits")+`}]}`))

	expect(204)(call(rename, "/v1/{prefix}/tables/rename", `{"source":{"namespace":["client"],"name":"t"},"destination":{"namespace":["client"],"name":"u"}}`))
	expect(200)(call(mkTab, "/v1/{prefix}/namespaces/client/tables", newTable))
	expect(409)(call(rename, "/v1/{prefix}/tables/rename", `{"source":{"namespace":["client"],"name":"t"},"destination":{"namespace":["client"],"name":"u"}}`))
	expect(404)(call(rename, "/v1/{prefix}/tables/rename", `{"source":{"namespace":["client"],"name":"missing"},"destination":{"namespace":["client"],"name":"v"}}`))
	expect(403)(call(rename, "/v1/{prefix}/tables/rename", `{"source":{"namespace":["client"],"name":"t"},"destination":{"namespace":["bronze"],"name":"t"}}`))
	expect(400)(call(rename, "/v1/{prefix}/tables/rename", `{"source":{"namespace":["client"],"name":"t"}}`))

	// A purge deletes the client table's files (its metadata files here).
	metaDir := filepath.Join(strings.TrimPrefix(loaded.Metadata.Location, "file://"), "metadata")
	if files, _ := filepath.Glob(filepath.Join(metaDir, "*.metadata.json")); len(files) == 0 {
		t.Fatalf("inconclusive: no metadata files under %s to purge", metaDir)
	}
	expect(204)(call(rmTab, "/v1/{prefix}/namespaces/client/tables/u?purgeRequested=true", ""))
	if files, _ := filepath.Glob(filepath.Join(metaDir, "*")); len(files) != 0 {
		t.Errorf("after a purge: %v left", files)
	}
	expect(204)(call(rmTab, "/v1/{prefix}/namespaces/client/tables/t", ""))
	expect(404)(call(rmTab, "/v1/{prefix}/namespaces/client/tables/t", ""))
	expect(403)(call(rmTab, "/v1/{prefix}/namespaces/bronze/tables/recentchange?purgeRequested=true", ""))
	if _, err := os.Stat(filepath.Join(wh, "bronze.db", "recentchange", "metadata")); err != nil {
		t.Errorf("bronze after a refused purge: %v", err)
	}

	expect(200)(call(mkTab, "/v1/{prefix}/namespaces/client/tables", newTable))
	expect(409)(call(rmNS, "/v1/{prefix}/namespaces/client", ""))
	expect(204)(call(rmTab, "/v1/{prefix}/namespaces/client/tables/t", ""))
	expect(204)(call(rmNS, "/v1/{prefix}/namespaces/client", ""))
	expect(404)(call(rmNS, "/v1/{prefix}/namespaces/client", ""))
	expect(403)(call(rmNS, "/v1/{prefix}/namespaces/bronze", ""))

	// Every endpoint the catalog advertises was driven to a success.
	if len(config.Endpoints) == 0 {
		t.Fatal("inconclusive: /v1/config lists no endpoints")
	}
	for _, ep := range config.Endpoints {
		spec, ok := specOps[ep]
		if !ok {
			t.Errorf("the catalog advertises %s, which this test has no expectations for", ep)
			continue
		}
		hit := false
		for code := range spec.ok {
			hit = hit || covered[ep][code]
		}
		if !hit {
			t.Errorf("%s: never answered with success here", ep)
		}
	}
	var report []string
	for op, codes := range covered {
		var cs []string
		for c := range codes {
			cs = append(cs, fmt.Sprint(c))
		}
		sort.Strings(cs)
		report = append(report, op+" "+strings.Join(cs, ","))
	}
	sort.Strings(report)
	t.Logf("statuses seen:\n%s", strings.Join(report, "\n"))
}
