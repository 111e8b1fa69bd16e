package boltfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// TestOwnerFile: a writable open records this process beside the file, a
// read-only one does not, Close removes it, an owner file left by a
// process that is gone is ignored, and a lock timeout names the holder.
func TestOwnerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	Holder = "test holder"
	db, err := Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	o, ok := ReadOwner(path)
	if !ok || o.PID != os.Getpid() || o.Command != "test holder" {
		t.Fatalf("owner after a writable open: %+v, %v", o, ok)
	}
	// bbolt's flock is per open file description: a second open in this
	// process waits as another process would.
	_, err = Open(path, 0o600, &bolt.Options{Timeout: 100 * time.Millisecond})
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, bolterrors.ErrTimeout) || le.Owner.PID != os.Getpid() ||
		!strings.Contains(err.Error(), "locked by pid "+strconv.Itoa(os.Getpid())+" (test holder, since ") {
		t.Fatalf("second open: %v; want a LockedError naming this process", err)
	}
	if err := Close(db); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".owner"); !os.IsNotExist(err) {
		t.Fatalf("owner file after Close: %v", err)
	}
	ro, err := Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".owner"); !os.IsNotExist(err) {
		t.Fatalf("owner file after a read-only open: %v", err)
	}
	if err := Close(ro); err != nil {
		t.Fatal(err)
	}

	// A process that is gone: its owner file is not believed.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no `true` to make a finished process:", err)
	}
	stale := `{"pid":` + strconv.Itoa(gone.Process.Pid) + `,"command":"lakehouse run","since":"2026-01-01T00:00:00Z"}`
	if err := os.WriteFile(path+".owner", []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	if o, ok := ReadOwner(path); ok {
		t.Fatalf("owner file of a finished process believed: %+v", o)
	}
}
