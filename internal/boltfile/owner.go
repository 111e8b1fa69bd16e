package boltfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The owner file, <file>.owner beside a bbolt file, names the process that
// holds the file open for writing, so a process that cannot take the lock
// can say who holds it. It is written (to a temporary file, renamed) once
// the lock is taken and removed by Close. A process killed while holding
// the file leaves it behind, naming a process that is gone: it is then
// ignored. A read-only open shares its lock with other readers and writes
// none.

// Holder describes this process in the owner files it writes (the command
// line, as package main sets it); empty: the executable's name.
var Holder string

// Owner is the content of an owner file.
type Owner struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

func ownerPath(path string) string { return path + ".owner" }

// writeOwner records this process as the holder of path.
func writeOwner(path string) error {
	cmd := Holder
	if cmd == "" {
		cmd = filepath.Base(os.Args[0])
	}
	b, err := json.Marshal(Owner{PID: os.Getpid(), Command: cmd, Since: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".owner.*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), ownerPath(path))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// ReadOwner returns the process recorded as holding path, if it is still
// running.
func ReadOwner(path string) (Owner, bool) {
	var o Owner
	b, err := os.ReadFile(ownerPath(path))
	if err != nil || json.Unmarshal(b, &o) != nil || o.PID <= 0 {
		return Owner{}, false
	}
	if err := syscall.Kill(o.PID, 0); errors.Is(err, syscall.ESRCH) {
		return Owner{}, false // left by a process that was killed
	}
	return o, true
}

// Close closes db and removes its owner file when this process wrote it.
func Close(db *bolt.DB) error {
	if !db.IsReadOnly() {
		if o, ok := ReadOwner(db.Path()); ok && o.PID == os.Getpid() {
			_ = os.Remove(ownerPath(db.Path()))
		}
	}
	return db.Close()
}

// LockedError is the error of an open or check that gave up waiting for
// another process's lock on Path. It matches bbolt's ErrTimeout.
type LockedError struct {
	Path  string
	Owner Owner // zero when no running process is recorded
}

func (e *LockedError) Error() string {
	if e.Owner.PID > 0 {
		return fmt.Sprintf("locked by pid %d (%s, since %s)", e.Owner.PID, e.Owner.Command, e.Owner.Since.Format(time.RFC3339))
	}
	return "locked by another process (none recorded as writing it: a reader such as verify, or an older build)"
}

func (e *LockedError) Unwrap() error { return bolterrors.ErrTimeout }

// locked turns a lock timeout on path into a LockedError naming the holder.
func locked(path string, err error) error {
	if !errors.Is(err, bolterrors.ErrTimeout) {
		return err
	}
	o, _ := ReadOwner(path)
	return &LockedError{Path: path, Owner: o}
}
