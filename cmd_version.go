package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"lakehouse/marts"
)

func init() {
	register(&command{name: "version", summary: "print the version, the commit it was built from, and the Go and DuckDB versions", run: runVersion})
}

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	printVersion(ctx, stdout)
	return nil
}

// printVersion writes what a bug report needs: the module version, the
// VCS commit (and whether the tree had changes), the Go toolchain and the
// DuckDB library.
func printVersion(ctx context.Context, w io.Writer) {
	fmt.Fprintf(w, "lakehouse %s\n", buildVersion())
	commit, when, dirty := "unknown (built outside a git checkout, or with -buildvcs=false)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if when != "" {
		commit += " (" + when + ")"
	}
	if dirty {
		commit += ", with uncommitted changes"
	}
	fmt.Fprintf(w, "commit  %s\n", commit)
	fmt.Fprintf(w, "go      %s\n", goVersion())
	duck, err := marts.DuckDBVersion(ctx)
	if err != nil {
		duck = "unknown: " + err.Error()
	}
	fmt.Fprintf(w, "duckdb  %s\n", duck)
}
