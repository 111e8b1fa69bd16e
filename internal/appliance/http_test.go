package appliance

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

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
