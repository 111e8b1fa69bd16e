package table

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	iceio "github.com/apache/iceberg-go/io"

	"lakehouse/internal/durable"
)

// durableFS is iceberg-go's local FileIO with the durability the library
// lacks: a file is fsynced when it is closed, and the directories that gained
// an entry (a new file, or a directory Create had to make) are fsynced before
// the next catalog pointer swap (syncDirtyDirs, called by the catalog), so
// every file a committed metadata file references survives a power cut.
// Renames fsync both directories at once.
type durableFS struct {
	iceio.LocalFS
}

// dirtyDirs are directories with entries not yet made durable.
var (
	dirtyMu   sync.Mutex
	dirtyDirs = map[string]struct{}{}
)

func markDirty(dir string) {
	dirtyMu.Lock()
	dirtyDirs[dir] = struct{}{}
	dirtyMu.Unlock()
}

// syncDirtyDirs fsyncs every directory that gained entries since the last
// call. The catalog calls it before swapping a table pointer. A directory
// that no longer exists is skipped (nothing in it can be referenced).
func syncDirtyDirs() error {
	dirtyMu.Lock()
	dirs := dirtyDirs
	dirtyDirs = map[string]struct{}{}
	dirtyMu.Unlock()
	for d := range dirs {
		if err := syncDir(d); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			for rest := range dirs { // keep them for the next attempt
				markDirty(rest)
			}
			return err
		}
	}
	return nil
}

var registerOnce sync.Once

// registerDurableFS replaces iceberg-go's "file" and "" (plain path) schemes
// with durableFS for the whole process.
func registerDurableFS() {
	registerOnce.Do(func() {
		factory := func(context.Context, *url.URL, map[string]string) (iceio.IO, error) {
			return durableFS{}, nil
		}
		for _, scheme := range []string{"file", ""} {
			iceio.Unregister(scheme)
			iceio.Register(scheme, factory)
		}
	})
}

// localName turns a file:// URI or a plain path into a local path.
func localName(name string) (string, error) {
	if !strings.HasPrefix(name, "file:") {
		return name, nil
	}
	u, err := url.Parse(name)
	if err != nil {
		return "", fmt.Errorf("parse local path %q: %w", name, err)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("parse local path %q: unsupported host %q", name, u.Host)
	}
	return filepath.FromSlash(u.Path), nil
}

// syncDir fsyncs a directory so entries created or renamed in it are durable.
func syncDir(dir string) error { return durable.SyncDir(dir) }

// mkdirAllDurable creates dir and its missing parents and marks the parent
// of every directory it created dirty (synced before the next pointer swap).
func mkdirAllDurable(dir string) error {
	parents, err := durable.MkdirAll(dir)
	for _, p := range parents {
		markDirty(p)
	}
	return err
}

// durableFile fsyncs itself and its directory on Close.
type durableFile struct {
	*os.File
	once sync.Once
	err  error
}

func (f *durableFile) Close() error {
	f.once.Do(func() {
		name := f.Name()
		if err := durable.Fsync(f.File); err != nil {
			_ = f.File.Close()
			f.err = fmt.Errorf("sync %s: %w", name, err)
			return
		}
		if err := f.File.Close(); err != nil {
			f.err = fmt.Errorf("close %s: %w", name, err)
			return
		}
		markDirty(filepath.Dir(name))
	})
	return f.err
}

// Create creates (or truncates) name for writing; the returned writer makes
// the file durable on Close. A manifest or manifest list (.avro) is written
// reframed on Close (avroframe.go).
func (durableFS) Create(name string) (iceio.FileWriter, error) {
	p, err := localName(name)
	if err != nil {
		return nil, err
	}
	if err := mkdirAllDurable(filepath.Dir(p)); err != nil {
		return nil, err
	}
	f, err := os.Create(p)
	if err != nil {
		return nil, err
	}
	return reframeWriter(p, &durableFile{File: f}), nil
}

// WriteFile writes content to name durably.
func (d durableFS) WriteFile(name string, content []byte) error {
	w, err := d.Create(name)
	if err != nil {
		return err
	}
	if _, err := w.Write(content); err != nil {
		_ = w.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	return w.Close()
}

// MkdirAll creates a directory path durably.
func (durableFS) MkdirAll(name string) error {
	p, err := localName(name)
	if err != nil {
		return err
	}
	return mkdirAllDurable(p)
}

// Rename renames and fsyncs both directories.
func (d durableFS) Rename(oldpath, newpath string) error {
	if err := d.LocalFS.Rename(oldpath, newpath); err != nil {
		return err
	}
	return syncRenameDirs(oldpath, newpath)
}

// RenameNoReplace links newpath to oldpath (failing if it exists), removes
// oldpath and fsyncs both directories.
func (d durableFS) RenameNoReplace(oldpath, newpath string) error {
	if err := d.LocalFS.RenameNoReplace(oldpath, newpath); err != nil {
		return err
	}
	return syncRenameDirs(oldpath, newpath)
}

func syncRenameDirs(oldpath, newpath string) error {
	src, err := localName(oldpath)
	if err != nil {
		return err
	}
	dst, err := localName(newpath)
	if err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	if filepath.Dir(src) != filepath.Dir(dst) {
		return syncDir(filepath.Dir(src))
	}
	return nil
}

// Remove deletes name. A file that is already gone counts as removed, as on
// S3, where deleting a missing key succeeds: iceberg-go's snapshot expiry
// re-deletes files that manifests of expired snapshots list as deleted,
// which an earlier expiry already removed.
func (d durableFS) Remove(name string) error {
	err := d.LocalFS.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
