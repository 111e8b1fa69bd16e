package verify

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/iceberg-go"

	"lakehouse/table/catalog"
	"lakehouse/table/restcatalog"
)

// serveRESTCatalog serves, on 127.0.0.1, an Iceberg REST catalog over an
// embedded catalog in dir/rest-catalog whose tables go under
// dir/warehouse: the catalog server of a prove run whose appliance keeps
// its tables in a REST catalog. It returns the URL and the stop function.
func serveRESTCatalog(dir string) (string, func(), error) {
	cdir := filepath.Join(dir, "rest-catalog")
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return "", nil, fmt.Errorf("REST catalog: %w", err)
	}
	cat, err := catalog.Open(context.Background(), filepath.Join(cdir, "catalog.db"), catalog.Options{
		Props: iceberg.Properties{"warehouse": filepath.Join(dir, "warehouse")},
	})
	if err != nil {
		return "", nil, fmt.Errorf("REST catalog: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = cat.Close()
		return "", nil, fmt.Errorf("REST catalog: %w", err)
	}
	srv := &http.Server{Handler: restcatalog.New(cat, restcatalog.Options{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = cat.Close()
	}
	return "http://" + ln.Addr().String(), stop, nil
}
