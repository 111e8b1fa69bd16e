// Package procmem owns reading a Linux process's memory figures from
// /proc/<pid>/status (VmRSS, RssAnon, RssFile, VmHWM, ...) and resetting
// this process's high-water mark: what the benchmarks and the soak measure
// from the kernel rather than from the Go runtime. It keeps no state;
// nothing in it survives a crash.
package procmem

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Status returns the named "kB" fields of /proc/<pid>/status in bytes
// (pid 0: this process). A name the kernel does not report is absent from
// the map.
func Status(pid int, names ...string) (map[string]int64, error) {
	dir := "self"
	if pid != 0 {
		dir = strconv.Itoa(pid)
	}
	b, err := os.ReadFile(filepath.Join("/proc", dir, "status"))
	if err != nil {
		return nil, fmt.Errorf("read process status: %w", err)
	}
	out := make(map[string]int64, len(names))
	for _, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(val), "kB")), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("process status %s: %w", name, err)
		}
		out[name] = kb << 10
	}
	return out, nil
}

// Self returns one field of this process's status in bytes, or -1 when it
// cannot be read.
func Self(name string) int64 {
	m, err := Status(0, name)
	if err != nil {
		return -1
	}
	if v, ok := m[name]; ok {
		return v
	}
	return -1
}

// ResetPeak sets this process's VmHWM to its current RSS, so a later
// Self("VmHWM") is the peak since now.
func ResetPeak() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}
