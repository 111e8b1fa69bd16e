package stream

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the kill test's child body instead of the tests when the
// process is that child (envChildDir set), and removes the benchmarks'
// backlog brokers after the tests.
func TestMain(m *testing.M) {
	if dir := os.Getenv(envChildDir); dir != "" {
		if err := bronzeKillChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "bronze kill child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	for _, d := range backlogDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
