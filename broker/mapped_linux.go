package broker

import (
	"fmt"
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
