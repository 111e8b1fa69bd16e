// Package dashboard is the appliance's web page: one HTML file with its
// script and style, embedded in the binary (no CDN, works offline), that
// polls /api/status and draws the pipeline, its lags, freshness, tables,
// asset checks and recent warnings. It owns no state; nothing of it needs
// to survive a crash.
package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var files embed.FS

// Handler serves the page at / and its assets under /static/.
func Handler() http.Handler {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	assets := http.StripPrefix("/static/", http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/":
			w.Header().Set("Cache-Control", "no-cache")
			http.ServeFileFS(w, r, sub, "index.html")
		case len(r.URL.Path) > len("/static/") && r.URL.Path[:len("/static/")] == "/static/":
			assets.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}
