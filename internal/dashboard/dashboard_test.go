package dashboard

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestServes: the page at /, its script and style under /static/, and
// nothing else (a directory listing included).
func TestServes(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	for _, c := range []struct {
		path, contentType string
		code              int
		contains          string
	}{
		{"/", "text/html", http.StatusOK, `<script src="/static/dashboard.js"`},
		{"/static/dashboard.js", "text/javascript", http.StatusOK, "/api/status"},
		{"/static/dashboard.css", "text/css", http.StatusOK, ".hop"},
		{"/static/", "", http.StatusNotFound, ""},
		{"/static/missing.js", "", http.StatusNotFound, ""},
		{"/index.html", "", http.StatusNotFound, ""},
	} {
		t.Run(c.path, func(t *testing.T) {
			resp, err := http.Get(srv.URL + c.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.code {
				t.Fatalf("status: got %d, want %d", resp.StatusCode, c.code)
			}
			if c.code != http.StatusOK {
				return
			}
			if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, c.contentType) {
				t.Errorf("Content-Type: got %q, want %s", got, c.contentType)
			}
			if got := resp.Header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("Cache-Control: got %q, want no-cache", got)
			}
			if !strings.Contains(string(b), c.contains) {
				t.Errorf("body does not contain %q", c.contains)
			}
		})
	}
}

// TestSelfContained: the page loads nothing from another host (no CDN,
// fonts or scripts from the network), so it works offline: every src and
// href is a path on the appliance or a data: URL, the style imports
// nothing, and the only absolute URL anywhere is SVG's namespace name.
func TestSelfContained(t *testing.T) {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		t.Fatal(err)
	}
	attr := regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*["']([^"']*)["']`)
	absolute := regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^\s"'()]*`)
	err = fs.WalkDir(sub, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, path)
		if err != nil {
			return err
		}
		text := string(b)
		for _, m := range attr.FindAllStringSubmatch(text, -1) {
			if u := m[1]; !(strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//")) && !strings.HasPrefix(u, "data:") {
				t.Errorf("%s: %s=%q is not a path on the appliance", path, m[0][:strings.IndexAny(m[0], "=")], u)
			}
		}
		for _, u := range absolute.FindAllString(text, -1) {
			if u != "http://www.w3.org/2000/svg" {
				t.Errorf("%s: absolute URL %q", path, u)
			}
		}
		if strings.Contains(text, "@import") || (strings.HasSuffix(path, ".css") && strings.Contains(text, "url(")) {
			t.Errorf("%s: imports a resource", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
