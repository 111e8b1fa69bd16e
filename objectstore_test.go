package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/dashboard"
	"lakehouse/internal/health"
)

// serverCounts counts, on the S3 server's side, the requests it received
// by the kind S3 bills: the source of truth the appliance's own count is
// checked against.
type serverCounts struct {
	mu sync.Mutex
	n  map[string]int64
}

func (c *serverCounts) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := r.Method
		q := r.URL.Query()
		if r.Method == http.MethodGet && (q.Has("list-type") || q.Has("prefix") || q.Has("delimiter") || q.Has("uploads") || q.Has("versions")) {
			kind = "LIST"
		}
		c.mu.Lock()
		c.n[kind]++
		c.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (c *serverCounts) get() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// TestObjectStoreRequestsCounted: the appliance (run's wiring) on an S3
// warehouse (gofakes3 on 127.0.0.1, settings from the AWS_* variables)
// takes a fixed replay through bronze, silver and a marts refresh; its
// count of object-store requests by kind, as /metrics and /api/status
// serve it, equals what the S3 server itself received, request for
// request, once the appliance has stopped, and never runs ahead of it
// while it runs.
func TestObjectStoreRequestsCounted(t *testing.T) {
	mem := s3mem.New()
	if err := mem.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	sc := &serverCounts{n: map[string]int64{}}
	srv := httptest.NewServer(sc.wrap(gofakes3.New(mem).Server()))
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")

	src := replay.New(replay.Config{Seed: 44, Restamp: true})
	src.Loops(replay.Generate(44, 400), 1)
	a := startAppliance(t, src, func(f *appliance.Config, _ *health.Rules) { f.Warehouse = "s3://lake/wh" })
	a.drained(t, src.Counts().OnTime)
	if _, err := mustMarts(t, a.p).Refresh(context.Background()); err != nil {
		t.Fatalf("refresh: %v", err)
	}

	_, body := a.get(t, "/metrics")
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	seen := sc.get() // after the scrape: the scrape's own requests are in both
	for _, m := range []string{"PUT", "POST", "GET", "HEAD", "LIST", "DELETE"} {
		got, ok := value(fams, "lakehouse_object_store_requests_total", map[string]string{"method": m})
		if !ok || int64(got) > seen[m] {
			t.Errorf("/metrics: %s requests %v (present %v), more than the server received (%d)", m, got, ok, seen[m])
		}
	}
	o := a.observation(t)
	if o.ObjectStore == nil || o.ObjectStore.Put == 0 {
		t.Errorf("/api/status has no object-store requests: %+v", o.ObjectStore)
	}
	var st strings.Builder
	if dashboard.WriteText(&st, o); !strings.Contains(st.String(), "object store: ") {
		t.Errorf("status prints no object-store requests:\n%s", st.String())
	}

	a.stop()
	got, ok := a.p.Lake().ObjectStoreRequests()
	if !ok {
		t.Fatal("the lake counts no requests on an S3 warehouse")
	}
	want := sc.get()
	if want["PUT"] == 0 || want["GET"] == 0 || want["HEAD"]+want["LIST"] == 0 {
		t.Fatalf("inconclusive: the server saw %v", want)
	}
	if g := got.ByMethod(); g["OTHER"] != 0 || len(want) > 6 {
		t.Errorf("requests of no known kind: appliance %v, server %v", g, want)
	}
	for m, n := range got.ByMethod() {
		if n != want[m] {
			t.Errorf("%s: the appliance counted %d requests, the S3 server received %d (all: appliance %v, server %v)", m, n, want[m], got.ByMethod(), want)
		}
	}
	t.Logf("requests for %d events: %v (%.4f USD at list prices)", src.Counts().OnTime, got.ByMethod(), got.USD())
}

// TestObjectStoreRequestsLocal: a local warehouse counts nothing, and
// /metrics and /api/status say nothing about object-store requests.
func TestObjectStoreRequestsLocal(t *testing.T) {
	src := replay.New(replay.Config{Seed: 45, Restamp: true})
	src.Loops(replay.Generate(45, 50), 1)
	a := startAppliance(t, src, nil)
	a.drained(t, src.Counts().OnTime)
	if _, ok := a.p.Lake().ObjectStoreRequests(); ok {
		t.Error("a local warehouse counts object-store requests")
	}
	if _, body := a.get(t, "/metrics"); strings.Contains(body, "lakehouse_object_store_requests_total") {
		t.Error("/metrics has object-store requests for a local warehouse")
	}
	o := a.observation(t)
	if o.ObjectStore != nil {
		t.Errorf("/api/status has object-store requests for a local warehouse: %+v", o.ObjectStore)
	}
	var st strings.Builder
	if dashboard.WriteText(&st, o); strings.Contains(st.String(), "object store") {
		t.Errorf("status prints object-store requests for a local warehouse:\n%s", st.String())
	}
}
