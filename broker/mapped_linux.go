package broker

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// dropMapped is madvise(MADV_DONTNEED) over [addr, addr+n). On a shared,
// file-backed mapping this only unmaps the pages from the process: later
// reads see the file's current contents again.
func dropMapped(addr uintptr, n int64) error {
	if n <= 0 {
		return nil
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, uintptr(n), syscall.MADV_DONTNEED); errno != 0 {
		return fmt.Errorf("release broker map (%d bytes): %w", n, errno)
	}
	return nil
}

// statm is /proc/self/statm, opened at the first fileResident and kept:
// reading it again from offset 0 has the kernel print it afresh, one
// system call instead of three.
var statm struct {
	once sync.Once
	fd   int // -1 when it cannot be opened
}

// fileResident is this process's resident file-backed and shared memory,
// in bytes (the third field of /proc/self/statm: RssFile + RssShmem), or
// -1 when it cannot be read. statm rather than status: the kernel prints
// it from counters, without walking the mappings; it is read at every
// commit and read of the broker, a system call next to the commit's writes
// and sync.
func fileResident() int64 {
	statm.once.Do(func() {
		fd, err := syscall.Open("/proc/self/statm", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		statm.fd = fd
	})
	if statm.fd < 0 {
		return -1
	}
	var buf [128]byte
	n, err := syscall.Pread(statm.fd, buf[:], 0)
	if err != nil || n <= 0 {
		return -1
	}
	f := bytes.Fields(buf[:n])
	if len(f) < 3 {
		return -1
	}
	pages, err := strconv.ParseInt(string(f[2]), 10, 64)
	if err != nil {
		return -1
	}
	return pages * int64(pageSize)
}

var pageSize = os.Getpagesize()
