// Package procmem owns reading a Linux process's memory figures from
// /proc/<pid>/status (VmRSS, RssAnon, RssFile, VmHWM, ...) and resetting
// this process's high-water mark: what the benchmarks and the soak measure
// from the kernel rather than from the Go runtime; and, for tests that
// bound what an operation touches, this process's resident pages of one
// file's mappings (/proc/self/smaps) and the bytes its read calls returned
// (/proc/self/io). It keeps no state; nothing in it survives a crash.
package procmem

import (
	"bufio"
	"bytes"
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

// MappedResident returns this process's resident bytes (Rss) of every
// mapping of the file at path (an absolute path, as /proc/self/smaps names
// it): the pages of a memory-mapped file the process has touched and not
// released.
func MappedResident(path string) (int64, error) {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("read process mappings: %w", err)
	}
	var total int64
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") { // a mapping's header: address range, perms, offset, dev, inode[, path]
			in = len(f) >= 6 && strings.Join(f[5:], " ") == path
			continue
		}
		if in && f[0] == "Rss:" && len(f) >= 2 {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("process mappings: Rss %q: %w", f[1], err)
			}
			total += kb << 10
		}
	}
	return total, sc.Err()
}

// ReadChars returns the bytes this process's read calls have returned so
// far (rchar in /proc/self/io: page cache hits included, a memory map's
// page faults not).
func ReadChars() (int64, error) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, fmt.Errorf("read process I/O counters: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no rchar in /proc/self/io")
}
