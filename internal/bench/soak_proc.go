package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"lakehouse/internal/procmem"
)

// procReading is what the kernel says about a process at one moment
// (Linux /proc; the soak measures the appliance from outside, never from
// its own counters).
type procReading struct {
	RSS, Anon, File, HWM int64 // bytes: VmRSS, RssAnon, RssFile, VmHWM of /proc/<pid>/status
	CPUTicks             int64 // utime + stime of /proc/<pid>/stat, all threads, in clock ticks
	WriteBytes           int64 // /proc/<pid>/io write_bytes: bytes it caused to be sent to storage
	CancelledWriteBytes  int64 // cancelled_write_bytes: of those, dirty pages truncated or deleted before writeback
	WChar                int64 // wchar: bytes passed to write(2) and the like, any destination
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports (sysconf(_SC_CLK_TCK) without
// cgo).
const clockTicks = 100

func readProc(pid int) (procReading, error) {
	var r procReading
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	status, err := procmem.Status(pid, "VmRSS", "RssAnon", "RssFile", "VmHWM")
	if err != nil {
		return r, err
	}
	r.RSS, r.Anon, r.File, r.HWM = status["VmRSS"], status["RssAnon"], status["RssFile"], status["VmHWM"]
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return r, fmt.Errorf("read process stat: %w", err)
	}
	if r.CPUTicks, err = parseStatCPU(string(stat)); err != nil {
		return r, err
	}
	io, err := os.ReadFile(filepath.Join(dir, "io"))
	if err != nil {
		return r, fmt.Errorf("read process io: %w", err)
	}
	for _, line := range strings.Split(string(io), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		switch name {
		case "write_bytes":
			r.WriteBytes = n
		case "cancelled_write_bytes":
			r.CancelledWriteBytes = n
		case "wchar":
			r.WChar = n
		}
	}
	return r, nil
}

// parseStatCPU returns utime + stime from a /proc/<pid>/stat line. The
// command name (field 2) is in parentheses and may hold spaces, so fields
// are counted after the last ')': state is field 3, utime 14, stime 15.
func parseStatCPU(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("process stat: no ')' after the command name")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("process stat: %d fields after the command name, want at least 13", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("process stat: %w", err)
	}
	return ut + st, nil
}

// dirBytes returns the disk space the files under dir take (allocated
// blocks where the platform reports them, else sizes). Files that vanish
// during the walk are skipped.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed since the listing
		}
		n += allocatedBytes(info)
		return nil
	})
	return n, err
}

// allocatedBytes is the disk space a file takes: its allocated blocks
// where the platform reports them (as du counts), else its size.
func allocatedBytes(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
