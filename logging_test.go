package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLogFormatFollowsTheJournal: --log-format auto writes JSON when stderr
// is the stream systemd's JOURNAL_STREAM names, text otherwise; a bad level
// or format is a usage error.
func TestLogFormatFollowsTheJournal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	st := fi.Sys().(*syscall.Stat_t)
	flags := pipelineFlags{logFormat: "auto", logLevel: "info"}

	t.Setenv("JOURNAL_STREAM", "")
	log, err := flags.logger(f)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("plain")
	t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", st.Dev, st.Ino))
	log, err = flags.logger(f)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("journal")
	log.Debug("hidden at info")
	b, _ := os.ReadFile(f.Name())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "time=") || !strings.HasPrefix(lines[1], "{") {
		t.Errorf("got %q, want a text line then a JSON line", lines)
	}
	var buf bytes.Buffer
	for _, bad := range []pipelineFlags{{logFormat: "xml", logLevel: "info"}, {logFormat: "text", logLevel: "loud"}} {
		if _, err := bad.logger(&buf); err == nil {
			t.Errorf("%+v: got no error", bad)
		}
	}
}
