package table_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"lakehouse/table"
)

// TestRESTCatalogAuth: a lake on a REST catalog sends its bearer token, or
// signs with SigV4 for the service named (AWS Glue's and S3 Tables'
// endpoints) with the S3 settings' region and keys; a catalog URI that is
// not rest+http(s) is refused.
func TestRESTCatalogAuth(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"defaults":{},"overrides":{},"endpoints":["GET /v1/{prefix}/namespaces"]}`))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		cfg  table.Config
		want []string
	}{
		{"token", table.Config{CatalogToken: "s3cret"}, []string{"Bearer s3cret"}},
		{"sigv4", table.Config{CatalogSigV4: "glue", S3: table.S3Config{Region: "eu-west-1", AccessKeyID: "AKIDTEST", SecretAccessKey: "x"}},
			[]string{"AWS4-HMAC-SHA256 Credential=AKIDTEST/", "/eu-west-1/glue/aws4_request"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			auth = nil
			mu.Unlock()
			cfg := tc.cfg
			cfg.Dir, cfg.Catalog = t.TempDir(), "rest+"+srv.URL
			l, err := table.Open(context.Background(), cfg)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			_ = l.Close()
			mu.Lock()
			defer mu.Unlock()
			if len(auth) == 0 {
				t.Fatal("inconclusive: the catalog was never asked")
			}
			for _, a := range auth {
				for _, w := range tc.want {
					if !strings.Contains(a, w) {
						t.Errorf("Authorization %q lacks %q", a, w)
					}
				}
			}
		})
	}
	for _, uri := range []string{"http://" + srv.Listener.Addr().String(), "rest+ftp://x", "rest+"} {
		if _, err := table.Open(context.Background(), table.Config{Dir: t.TempDir(), Catalog: uri}); !errors.Is(err, table.ErrCatalogURI) {
			t.Errorf("catalog %q: got %v, want ErrCatalogURI", uri, err)
		}
	}
}
