package broker

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"

	"lakehouse/internal/fault"
)

// FailAppend is the failure point tests arm to make a group commit fail
// (as a full disk would) before anything is written.
const FailAppend = "broker.append"

// ErrDiskReserve means an Append was refused because the file system
// holding broker.db has less free space than Options.DiskReserve: the
// space left is kept for the stream queries that drain the broker. The
// error is transient (see package transient): it passes once the drain,
// retention or the operator frees space.
var ErrDiskReserve = errors.New("disk reserve reached")

// ReserveError is the error an Append refused for the disk reserve returns.
type ReserveError struct {
	Dir           string
	Free, Reserve int64
}

func (e *ReserveError) Error() string {
	return fmt.Sprintf("%v: %s has %d bytes free, below the reserve of %d kept for draining the broker", ErrDiskReserve, e.Dir, e.Free, e.Reserve)
}

// Is makes errors.Is(err, ErrDiskReserve) hold.
func (e *ReserveError) Is(target error) bool { return target == ErrDiskReserve }

// Transient reports true: the refusal passes once space is freed.
func (e *ReserveError) Transient() bool { return true }

// checkAppend is run before a group commit writes: the armed failure
// point, then the disk reserve.
func (d *DB) checkAppend() error {
	if err := fault.Err(FailAppend); err != nil {
		return fmt.Errorf("append to %s: %w", d.path, err)
	}
	if d.opts.DiskReserve <= 0 {
		return nil
	}
	dir := filepath.Dir(d.path)
	free, err := freeBytes(dir)
	if err != nil {
		return nil // no figure, no refusal: the write itself will say
	}
	if free < d.opts.DiskReserve {
		return &ReserveError{Dir: dir, Free: free, Reserve: d.opts.DiskReserve}
	}
	return nil
}

// freeBytes is the space an unprivileged writer has left on dir's file
// system; tests replace it.
var freeBytes = func(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
