package table

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"

	iceio "github.com/apache/iceberg-go/io"

	"lakehouse/internal/fault"
)

// FailWrite is the failure point tests arm to make every file the lake
// creates on local disk fail to be written (as a full disk would): data
// files, manifests and metadata files.
const FailWrite = "table.write"

// ErrOutsideWarehouse means a path a table's metadata names is not inside
// the lake's warehouse directory (nor under the root the lake was created
// at), so the lake refuses to read or write it.
var ErrOutsideWarehouse = errors.New("outside the warehouse")

// rootedFS is the local FileIO of one Lake. Iceberg metadata names files
// by absolute path, under the warehouse root the lake was created at (the
// recorded root, which the catalog reads from its tables' pointers). When
// the data directory has been copied or moved, that root is not where the
// files are: rootedFS maps every path under the recorded root to the same
// path under the warehouse directory the lake was opened with (actual), and
// refuses every path that ends up outside actual. So a copy reads and
// writes only its own files, never the original's, and a move keeps
// working; the metadata keeps naming the recorded root, which every reader
// in this process resolves the same way (DataFiles hands DuckDB resolved
// paths; WalkDir reports paths under the root it was asked for, so orphan
// cleanup compares like with like).
type rootedFS struct {
	recorded, actual string // cleaned absolute local paths
	fs               durableFS
	lastWrite        atomic.Pointer[error] // the newest failed create or write, for lostWrite
}

// failed remembers a failed create or write and returns it.
func (r *rootedFS) failed(err error) error {
	if err != nil {
		r.lastWrite.Store(&err)
	}
	return err
}

// lastWriteError is the newest create or write that failed in this lake
// (nil if none): iceberg-go's partitioned writer can drop such an error
// (ErrLostWrite), and this is what it most likely was.
func (r *rootedFS) lastWriteError() error {
	if p := r.lastWrite.Load(); p != nil {
		return *p
	}
	return nil
}

func newRootedFS(recorded, actual string) *rootedFS {
	return &rootedFS{recorded: filepath.Clean(recorded), actual: filepath.Clean(actual)}
}

// moved reports whether the recorded root differs from the actual one.
func (r *rootedFS) moved() bool { return r.recorded != r.actual }

// open is the catalog's FileIO hook: every location gets this FileIO.
func (r *rootedFS) open(context.Context, string) (iceio.IO, error) { return r, nil }

// under reports whether p is root or inside it.
func under(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// resolve maps name (a plain path or file:// URI) to the local path it
// names in this lake, or fails with ErrOutsideWarehouse.
func (r *rootedFS) resolve(name string) (string, error) {
	p, err := localName(name)
	if err != nil {
		return "", err
	}
	p = filepath.Clean(p)
	if r.moved() && under(p, r.recorded) {
		p = r.actual + p[len(r.recorded):]
	}
	if !under(p, r.actual) {
		return "", &fs.PathError{Op: "resolve", Path: name,
			Err: fmt.Errorf("%w %s (the lake was created at %s)", ErrOutsideWarehouse, r.actual, r.recorded)}
	}
	return p, nil
}

func (r *rootedFS) Open(name string) (iceio.File, error) {
	p, err := r.resolve(name)
	if err != nil {
		return nil, err
	}
	return r.fs.Open(p)
}

func (r *rootedFS) ReadFile(name string) ([]byte, error) {
	p, err := r.resolve(name)
	if err != nil {
		return nil, err
	}
	return r.fs.ReadFile(p)
}

func (r *rootedFS) Create(name string) (iceio.FileWriter, error) {
	p, err := r.resolve(name)
	if err != nil {
		return nil, err
	}
	if err := fault.Err(FailWrite); err != nil {
		return nil, r.failed(&fs.PathError{Op: "create", Path: p, Err: err})
	}
	w, err := r.fs.Create(p)
	return w, r.failed(err)
}

func (r *rootedFS) WriteFile(name string, content []byte) error {
	p, err := r.resolve(name)
	if err != nil {
		return err
	}
	if err := fault.Err(FailWrite); err != nil {
		return r.failed(&fs.PathError{Op: "write", Path: p, Err: err})
	}
	return r.failed(r.fs.WriteFile(p, content))
}

func (r *rootedFS) Remove(name string) error {
	p, err := r.resolve(name)
	if err != nil {
		return err
	}
	return r.fs.Remove(p)
}

func (r *rootedFS) RemoveAll(name string) error {
	p, err := r.resolve(name)
	if err != nil {
		return err
	}
	return r.fs.RemoveAll(p)
}

func (r *rootedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := r.resolve(name)
	if err != nil {
		return nil, err
	}
	return r.fs.ReadDir(p)
}

func (r *rootedFS) MkdirAll(name string) error {
	p, err := r.resolve(name)
	if err != nil {
		return err
	}
	return r.fs.MkdirAll(p)
}

func (r *rootedFS) Mkdir(name string) error {
	p, err := r.resolve(name)
	if err != nil {
		return err
	}
	return r.fs.Mkdir(p)
}

func (r *rootedFS) Stat(name string) (fs.FileInfo, error) {
	p, err := r.resolve(name)
	if err != nil {
		return nil, err
	}
	return r.fs.Stat(p)
}

func (r *rootedFS) Rename(oldpath, newpath string) error {
	src, err := r.resolve(oldpath)
	if err != nil {
		return err
	}
	dst, err := r.resolve(newpath)
	if err != nil {
		return err
	}
	return r.fs.Rename(src, dst)
}

func (r *rootedFS) RenameNoReplace(oldpath, newpath string) error {
	src, err := r.resolve(oldpath)
	if err != nil {
		return err
	}
	dst, err := r.resolve(newpath)
	if err != nil {
		return err
	}
	return r.fs.RenameNoReplace(src, dst)
}

// WalkDir walks the directory root resolves to and reports each path under
// root as given (the recorded root when the metadata names it), so that the
// paths it reports compare equal to the ones the metadata holds.
func (r *rootedFS) WalkDir(root string, fn fs.WalkDirFunc) error {
	p, err := r.resolve(root)
	if err != nil {
		return err
	}
	given, err := localName(root)
	if err != nil {
		return err
	}
	given = filepath.Clean(given)
	return r.fs.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		return fn(given+path[len(p):], d, err)
	})
}

var (
	_ iceio.ReadFileIO  = (*rootedFS)(nil)
	_ iceio.WriteFileIO = (*rootedFS)(nil)
	_ iceio.ListableIO  = (*rootedFS)(nil)
	_ iceio.StatIO      = (*rootedFS)(nil)
)
