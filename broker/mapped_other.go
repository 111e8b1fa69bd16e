//go:build !linux

package broker

// dropMapped is a no-op where MADV_DONTNEED's semantics on shared file
// mappings are not the ones relied on here: the kernel still reclaims the
// pages under memory pressure.
func dropMapped(addr uintptr, n int64) error { return nil }

// fileResident has no figure here: the map is released by the bytes of
// records only.
func fileResident() int64 { return -1 }
