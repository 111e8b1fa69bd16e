// Package dashboard is the appliance's web page: one HTML file with its
// script and style, embedded in the binary (no CDN, works offline), that
// polls /api/status and draws the pipeline, its lags, freshness, tables,
// asset checks and recent warnings; and the same observation as text for
// a terminal (WriteText, `lakehouse status`). It owns no state; nothing of
// it needs to survive a crash.
package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var files embed.FS

// Handler serves the page at / and its assets (dashboard.js, dashboard.css)
// under /static/. Browsers revalidate every response (Cache-Control:
// no-cache), so an upgraded binary's page is never mixed with an old script.
func Handler() http.Handler {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	assets := http.StripPrefix("/static/", http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		switch {
		case r.URL.Path == "/":
			http.ServeFileFS(w, r, sub, "index.html")
		case strings.HasPrefix(r.URL.Path, "/static/") && r.URL.Path != "/static/":
			assets.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}
