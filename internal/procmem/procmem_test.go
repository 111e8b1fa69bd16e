package procmem

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestStatusOfSelf: this process's RSS and peak read through its pid, the
// peak is at least the RSS, a missing field or process says so, and
// ResetPeak does not raise the peak (beyond what the RSS grows meanwhile).
func TestStatusOfSelf(t *testing.T) {
	m, err := Status(os.Getpid(), "VmRSS", "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	if m["VmRSS"] <= 0 || m["VmHWM"] < m["VmRSS"] {
		t.Fatalf("VmRSS %d, VmHWM %d", m["VmRSS"], m["VmHWM"])
	}
	if Self("NoSuchField") != -1 {
		t.Fatal("a missing field reads as -1")
	}
	if _, err := Status(-5); err == nil {
		t.Fatal("a missing process is an error")
	}
	before := Self("VmHWM")
	ResetPeak()
	if after := Self("VmHWM"); after <= 0 || after > before+1<<20 { // the RSS may grow a little meanwhile
		t.Fatalf("VmHWM %d after ResetPeak, %d before", after, before)
	}
}

// TestMappedResidentAndReadChars: touching 64 pages of a 1 MiB file's
// shared map makes at least those resident in its mapping (and the count
// is 0 for a path not mapped); reading the file adds at least its size to
// the bytes read.
func TestMappedResidentAndReadChars(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, 1<<20, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	sum := 0
	for i := 0; i < 64; i++ {
		sum += int(m[i*os.Getpagesize()])
	}
	rss, err := MappedResident(path)
	if err != nil {
		t.Fatal(err)
	}
	if rss < int64(64*os.Getpagesize()) || rss > 1<<20 || sum != 0 {
		t.Fatalf("%d bytes resident after touching 64 pages of a 1 MiB map", rss)
	}
	if none, err := MappedResident(path + ".absent"); err != nil || none != 0 {
		t.Fatalf("a file not mapped: %d, %v", none, err)
	}
	before, err := ReadChars()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	after, err := ReadChars()
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 1<<20 {
		t.Fatalf("read a 1 MiB file: rchar grew by %d", after-before)
	}
}
