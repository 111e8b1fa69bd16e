package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// self is this program as it was invoked, for the command lines that hints
// print: "go run ." when `go run` built it (into a go-build temporary
// directory, or the build cache where Go caches what go run builds), the
// bare name when the shell finds that name on PATH, else os.Args[0] as
// given (./lakehouse).
func self() string {
	return selfFrom(os.Args[0])
}

func selfFrom(arg0 string) string {
	if builtByGoRun(arg0) {
		return "go run ."
	}
	if !strings.Contains(arg0, "/") {
		return arg0
	}
	base := filepath.Base(arg0)
	if onPath, err := exec.LookPath(base); err == nil && sameFile(onPath, arg0) {
		return base
	}
	return arg0
}

// builtByGoRun: a binary under a go-build directory (go run's temporary
// one, or the build cache) that is not a test binary.
func builtByGoRun(arg0 string) bool {
	if strings.HasSuffix(arg0, ".test") {
		return false
	}
	for _, seg := range strings.Split(filepath.ToSlash(filepath.Dir(arg0)), "/") {
		if strings.HasPrefix(seg, "go-build") {
			return true
		}
	}
	return false
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
