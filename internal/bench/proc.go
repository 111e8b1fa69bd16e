package bench

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"lakehouse/internal/procmem"
)

// cpuTime is this process's user and system CPU time so far, in seconds.
func cpuTime() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// ResetPeakRSS resets the kernel's high-water mark of resident memory
// (VmHWM) so each phase reports its own peak.
func ResetPeakRSS() {
	debug.FreeOSMemory() // return the previous phase's heap first, or its RSS counts here
	procmem.ResetPeak()
}

// SampleAnon samples the process's anonymous resident memory every 100 ms
// until stop is closed, then sends the maximum seen.
func SampleAnon(stop <-chan struct{}, out chan<- float64) {
	peak := procStatusMiB("RssAnon")
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			out <- peak
			return
		case <-t.C:
			if v := procStatusMiB("RssAnon"); v > peak {
				peak = v
			}
		}
	}
}

// procStatusMiB reads a field of /proc/self/status ("VmHWM") in MiB
// (NaN: unreadable).
func procStatusMiB(field string) float64 {
	v := procmem.Self(field)
	if v < 0 {
		return math.NaN()
	}
	return float64(v) / (1 << 20)
}

// writeHeapProfile writes a heap profile named name into dir ("" : none).
func writeHeapProfile(dir, name string) {
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.WriteHeapProfile(f)
}
