package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHTTPAddressRules: loopback addresses are served as they are; any
// other address is refused unless --http-remote and a token are both given;
// "off" turns the surface off.
func TestHTTPAddressRules(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		remote, ok  bool
	}{
		{"127.0.0.1:8080", "", false, true},
		{"localhost:0", "", false, true},
		{"[::1]:9000", "", false, true},
		{"off", "", false, true},
		{"0.0.0.0:8080", "", false, false},
		{":8080", "", false, false},
		{"0.0.0.0:8080", "s3cret", false, false},
		{"0.0.0.0:8080", "", true, false},
		{"0.0.0.0:8080", "s3cret", true, true},
		{"not-an-address", "", false, false},
	} {
		f := pipelineFlags{httpAddr: tc.addr, httpToken: tc.token, httpRemote: tc.remote}
		err := f.checkHTTP()
		if (err == nil) != tc.ok {
			t.Errorf("--http %s (token %q, remote %v): got %v, want ok=%v", tc.addr, tc.token, tc.remote, err, tc.ok)
		}
		if err != nil && !errors.Is(err, errUsage) {
			t.Errorf("--http %s: %v is not a usage error", tc.addr, err)
		}
	}
}

// TestBearerToken: with a token set every request for data needs it,
// compared exactly, with the scheme in any case (RFC 9110 auth schemes are
// case-insensitive: a client sending "bearer" was refused); the
// dashboard's page (no data) loads without it.
func TestBearerToken(t *testing.T) {
	h := withToken("s3cret", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for _, tc := range []struct {
		header string
		want   int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"Bearer s3cret2", http.StatusUnauthorized},
		{"bearer s3cret", http.StatusTeapot},
		{"BEARER s3cret", http.StatusTeapot},
		{"Bearer s3cret", http.StatusTeapot},
		{"Basic s3cret", http.StatusUnauthorized},
		{"Bearers3cret", http.StatusUnauthorized},
		{"s3cret", http.StatusUnauthorized},
		{"Bearer S3CRET", http.StatusUnauthorized},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("Authorization %q: got %d, want %d", tc.header, rec.Code, tc.want)
		}
	}
	// The dashboard's page and assets hold no data and load without it.
	for _, path := range []string{"/", "/static/dashboard.js"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusTeapot {
			t.Errorf("GET %s without a token: got %d, want it served", path, rec.Code)
		}
	}
	for _, path := range []string{"/api/status", "/metrics", "/readyz", "/debug/pprof/", "/static"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: got %d, want 401", path, rec.Code)
		}
	}
	if withToken("", http.NotFoundHandler()) == nil {
		t.Fatal("no handler without a token")
	}
}
