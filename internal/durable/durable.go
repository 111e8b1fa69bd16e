// Package durable writes local files and directories so that they survive a
// crash and a power cut: a file is fsynced before it is renamed into place,
// and a directory is fsynced after it gained or lost an entry. It is the one
// place the project calls fsync outside bbolt (the stream checkpoints, the
// table warehouse's local file IO).
//
// What survives a crash: after WriteFile returns, the file holds all of its
// data; if WriteFile did not return, the file holds its old content (or is
// absent), and at most a temp file (TempPrefix) is left beside it, which
// RemoveTemps deletes. After MkdirAll returns (with SyncDirs on what it
// reports), every directory it created is there.
package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Fsync is the sync call for files and directories. It is a seam for
// tests: they replace it to inject failures (EIO, ENOSPC) or to see which
// files and directories were made durable.
var Fsync = (*os.File).Sync

// TempPrefix starts the name of a file WriteFile has not finished.
const TempPrefix = ".tmp-"

// WriteFile replaces dir/name with data: temp file in dir, fsync, rename,
// fsync of dir. Errors name the file and wrap the cause.
func WriteFile(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, TempPrefix+name+"-*")
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := Fsync(f); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	ok = true
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so that entries created, renamed or removed in
// it are durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	serr := Fsync(d)
	cerr := d.Close()
	if serr != nil {
		return fmt.Errorf("sync dir %s: %w", dir, serr)
	}
	if cerr != nil {
		return fmt.Errorf("close dir %s: %w", dir, cerr)
	}
	return nil
}

// MkdirAll creates dir and its missing parents and returns the directories
// that gained an entry (the parent of each directory it created), which the
// caller must fsync (SyncDirs) before relying on them: at once, or, as the
// table IO does, before the commit that references what goes in them.
func MkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("stat %s: %w", d, err)
		}
		missing = append(missing, d)
		if parent := filepath.Dir(d); parent == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("mkdir %s: %w", dir, err)
	}
	parents := make([]string, 0, len(missing))
	for _, d := range missing {
		parents = append(parents, filepath.Dir(d))
	}
	return parents, nil
}

// SyncDirs fsyncs each of dirs (SyncDir), stopping at the first error.
func SyncDirs(dirs []string) error {
	for _, d := range dirs {
		if err := SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// RemoveTemps deletes the temp files a crash left in dir (TempPrefix).
func RemoveTemps(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("remove temp file: %w", err)
			}
		}
	}
	return nil
}
