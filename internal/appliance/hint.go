package appliance

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"lakehouse/internal/boltfile"
	"lakehouse/internal/humanize"
)

// Hint is the way out of an error that has one the message itself does
// not give, with self the command line that runs this program (as in
// `self run`): a data directory another process holds, one nothing has
// run on, a missing data file, a lake an older version wrote.
func Hint(err error, self string) string {
	var le *boltfile.LockedError
	if errors.As(err, &le) {
		dir := filepath.Dir(le.Path)
		if le.Owner.PID > 0 {
			return fmt.Sprintf("stop pid %d first (systemctl stop lakehouse when it is the service, else kill %d: it stops cleanly), or use another --data than %s", le.Owner.PID, le.Owner.PID, dir)
		}
		return fmt.Sprintf("stop the process using %s first (fuser %s names it), or use another --data", dir, le.Path)
	}
	var nb *NoBrokerError
	if errors.As(err, &nb) {
		return fmt.Sprintf("run `%[1]s demo` or `%[1]s run` first, or pass --data", self)
	}
	var ol *OlderLakeError
	if errors.As(err, &ol) {
		return fmt.Sprintf("to upgrade it, start the appliance on it once: `%s run --data %s --no-ingest` upgrades the tables in place as it starts; stop it (Ctrl-C) once it logs \"lakehouse running\", or leave it running (every command reads through it)",
			self, humanize.ShellJoin([]string{ol.Data}))
	}
	var pe *fs.PathError
	if errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe) && strings.HasSuffix(pe.Path, ".parquet") {
		p := filepath.ToSlash(pe.Path)
		if i := strings.Index(p, "/bronze.db/recentchange/"); i >= 0 {
			data := ""
			if d, ok := strings.CutSuffix(p[:i], "/warehouse"); ok {
				data = " --data " + humanize.ShellJoin([]string{filepath.FromSlash(d)})
			}
			return fmt.Sprintf("a bronze data file is missing: with the appliance stopped, `%[1]s reland%[2]s --dry-run` lists the missing files and `%[1]s reland%[2]s` re-lands their rows from the broker, exactly once", self, data)
		}
		return "a data file is missing: only bronze.recentchange's rows can be re-landed from the broker (reland); restore this table's files from a backup of the warehouse"
	}
	return ""
}
