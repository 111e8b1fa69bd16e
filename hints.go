package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"lakehouse/internal/appliance"
	"lakehouse/internal/boltfile"
	"lakehouse/internal/humanize"
)

// self is this program as it was invoked, for the command lines that hints
// print: "go run ." when `go run` built it (into a go-build temporary
// directory, or the build cache where Go caches what go run builds), the
// bare name when the shell finds that name on PATH, else os.Args[0] as
// given (./lakehouse).
func self() string {
	return selfFrom(os.Args[0])
}

func selfFrom(arg0 string) string {
	if builtByGoRun(arg0) {
		return "go run ."
	}
	if !strings.Contains(arg0, "/") {
		return arg0
	}
	base := filepath.Base(arg0)
	if onPath, err := exec.LookPath(base); err == nil && sameFile(onPath, arg0) {
		return base
	}
	return arg0
}

// builtByGoRun: a binary under a go-build directory (go run's temporary
// one, or the build cache) that is not a test binary.
func builtByGoRun(arg0 string) bool {
	if strings.HasSuffix(arg0, ".test") {
		return false
	}
	for _, seg := range strings.Split(filepath.ToSlash(filepath.Dir(arg0)), "/") {
		if strings.HasPrefix(seg, "go-build") {
			return true
		}
	}
	return false
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// errorHint is the way out of an error that has one the message itself
// does not give: a data directory another process holds, one nothing has
// run on, a missing data file, a lake an older version wrote.
func errorHint(err error) string {
	var le *boltfile.LockedError
	if errors.As(err, &le) {
		dir := filepath.Dir(le.Path)
		if le.Owner.PID > 0 {
			return fmt.Sprintf("stop pid %d first (systemctl stop lakehouse when it is the service, else kill %d: it stops cleanly), or use another --data than %s", le.Owner.PID, le.Owner.PID, dir)
		}
		return fmt.Sprintf("stop the process using %s first (fuser %s names it), or use another --data", dir, le.Path)
	}
	var nb *appliance.NoBrokerError
	if errors.As(err, &nb) {
		return fmt.Sprintf("run `%[1]s demo` or `%[1]s run` first, or pass --data", self())
	}
	var ol *appliance.OlderLakeError
	if errors.As(err, &ol) {
		return fmt.Sprintf("to upgrade it, start the appliance on it once: `%s run --data %s --no-ingest` upgrades the tables in place as it starts; stop it (Ctrl-C) once it logs \"lakehouse running\", or leave it running (every command reads through it)",
			self(), humanize.ShellJoin([]string{ol.Data}))
	}
	var pe *fs.PathError
	if errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe) && strings.HasSuffix(pe.Path, ".parquet") {
		p := filepath.ToSlash(pe.Path)
		if i := strings.Index(p, "/bronze.db/recentchange/"); i >= 0 {
			data := ""
			if d, ok := strings.CutSuffix(p[:i], "/warehouse"); ok {
				data = " --data " + humanize.ShellJoin([]string{filepath.FromSlash(d)})
			}
			return fmt.Sprintf("a bronze data file is missing: with the appliance stopped, `%[1]s reland%[2]s --dry-run` lists the missing files and `%[1]s reland%[2]s` re-lands their rows from the broker, exactly once", self(), data)
		}
		return "a data file is missing: only bronze.recentchange's rows can be re-landed from the broker (reland); restore this table's files from a backup of the warehouse"
	}
	return ""
}
