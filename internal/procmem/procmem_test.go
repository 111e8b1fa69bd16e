package procmem

import (
	"os"
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
