package stream

import (
	"os"
	"testing"

	"lakehouse/internal/crashtest"
)

// TestMain runs the kill test's child body instead of the tests when the
// process is that child (crashtest), and removes the benchmarks' backlog
// brokers after the tests.
func TestMain(m *testing.M) {
	code := crashtest.Main(m, map[string]crashtest.Role{"kill": bronzeKillChild})
	for _, d := range backlogDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
