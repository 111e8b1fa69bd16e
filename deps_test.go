package main

import (
	"os/exec"
	"strings"
	"testing"
)

// allowedImports is the dependency direction docs/source.md describes:
// which top-level project packages each top-level package may import (its
// own sub-packages and lakehouse/internal/... are always allowed).
var allowedImports = map[string][]string{
	"broker": nil,
	"ingest": {"broker"},
	"table":  nil,
	"stream": {"broker", "table"},
	"marts":  {"table", "broker"},
	"verify": {"broker", "table", "ingest"},
}

// TestDependencyDirection fails when a package imports a project package the
// design does not allow (checked with `go list -deps`, so indirect imports
// count too), or when a package of the design is missing.
func TestDependencyDirection(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the dependency check needs the go command on PATH: %v", err)
	}
	for pkg, allowed := range allowedImports {
		// A package of the design card that is missing (moved, renamed)
		// fails here: go list reports it.
		out, err := exec.Command("go", "list", "-deps", "./"+pkg+"/...").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps ./%s/...: %v\n%s", pkg, err, out)
		}
		ok := map[string]bool{pkg: true, "internal": true}
		for _, a := range allowed {
			ok[a] = true
		}
		for _, dep := range strings.Fields(string(out)) {
			rest, isProject := strings.CutPrefix(dep, "lakehouse/")
			if !isProject {
				continue
			}
			top, _, _ := strings.Cut(rest, "/")
			if !ok[top] {
				t.Errorf("%s depends on %s; docs/source.md allows only %v", pkg, dep, allowed)
			}
		}
	}
}
