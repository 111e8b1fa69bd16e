package main

import (
	"errors"
	"testing"
)

// TestKillAtFromEnv: a malformed setting is a usage error (a kill test
// that never kills would otherwise pass as inconclusive forever).
func TestKillAtFromEnv(t *testing.T) {
	for _, v := range []string{"x", "0", "-5"} {
		t.Setenv(envKillAtBronze, v)
		if _, err := killAtFromEnv(); !errors.Is(err, errUsage) {
			t.Errorf("%s=%q: got %v, want a usage error", envKillAtBronze, v, err)
		}
	}
	t.Setenv(envKillAtBronze, "1234")
	if n, err := killAtFromEnv(); n != 1234 || err != nil {
		t.Errorf("%s=1234: got %d, %v", envKillAtBronze, n, err)
	}
}
