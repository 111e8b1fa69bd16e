package main

import (
	"runtime"
	"runtime/debug"
)

// buildVersion is the module version and VCS revision the binary was built
// from, as the Go toolchain recorded them ("devel" when unknown).
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	return v
}

func goVersion() string { return runtime.Version() }
