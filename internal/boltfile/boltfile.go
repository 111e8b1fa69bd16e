// Package boltfile opens bbolt files defensively, so that a damaged file is
// an error naming it and never a crash or a silently new database.
//
// bbolt trusts its file: a truncated file makes it fault (SIGBUS) on pages
// past the end that its meta page names, a garbled page makes it panic
// ("freepages: failed to get all reachable pages", "Page expected to be:
// 5, but self identifies as ..."), and an empty file is initialised as a new
// database. Open checks what it can before bbolt maps the file (not empty,
// a valid meta page, not shorter than the pages that meta names, every
// page reachable from the root a well-formed branch or leaf that names
// itself), and turns a fault or panic while bbolt opens it, and while the
// caller's first transactions run (Guard), into ErrDamaged. Nothing here
// writes to the file.
package boltfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// LockTimeout is how long the appliance's bbolt files (broker.db,
// catalog.db) wait for another process's file lock before saying that
// process holds it (most often: the appliance is running on the same data
// directory). One figure for both, so a command gives up on both at once.
const LockTimeout = 5 * time.Second

// ErrDamaged: the file is not a healthy bbolt database.
var ErrDamaged = errors.New("damaged bbolt file")

// ErrEmpty: the file exists and holds no bytes (wraps ErrDamaged): bbolt
// would initialise it as a new, empty database.
var ErrEmpty = fmt.Errorf("%w: empty file", ErrDamaged)

const (
	magic   = 0xED0CDAED
	version = 2
	// metaSize is the meta struct's bytes before its checksum, after the
	// 16-byte page header: magic, version, page size, flags, root bucket
	// (root, sequence), freelist, high-water page id, txid.
	pageHeader = 16
	metaSum    = 56
)

type meta struct {
	pageSize uint32
	root     uint64 // the root bucket's page
	pgid     uint64 // high-water mark: pages in use are below it
	txid     uint64
}

// parseMeta reads the meta page at off, reporting whether it is valid.
func parseMeta(f io.ReaderAt, off int64) (meta, bool) {
	b := make([]byte, pageHeader+metaSum+8)
	if _, err := f.ReadAt(b, off); err != nil {
		return meta{}, false
	}
	m := b[pageHeader:]
	le := binary.LittleEndian
	if le.Uint32(m[0:]) != magic || le.Uint32(m[4:]) != version {
		return meta{}, false
	}
	h := fnv.New64a()
	h.Write(m[:metaSum])
	if h.Sum64() != le.Uint64(m[metaSum:]) {
		return meta{}, false
	}
	return meta{pageSize: le.Uint32(m[8:]), root: le.Uint64(m[16:]), pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
}

// precheck inspects an existing file without mapping it, under a shared
// lock (waiting at most timeout): ErrEmpty for an empty file, ErrDamaged
// when neither meta page is valid, the file is shorter than the pages its
// newest valid meta names, or a page reachable from the root bucket is
// damaged (see walker). A file that does not exist is not an error (bbolt
// creates it).
func precheck(path string, timeout time.Duration) (meta, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return meta{}, nil
	}
	if err != nil {
		return meta{}, err
	}
	defer f.Close()
	// The pages are read under a shared lock, so a file another process
	// is writing is "locked", never "damaged"; the lock is released (with
	// f) before bbolt takes its own.
	if err := lockShared(f, timeout); err != nil {
		return meta{}, err
	}
	st, err := f.Stat()
	if err != nil {
		return meta{}, err
	}
	size := st.Size()
	if size == 0 {
		return meta{}, ErrEmpty
	}
	m0, ok0 := parseMeta(f, 0)
	var m1 meta
	ok1 := false
	sizes := []int64{4096, 8192, 16384, 32768, 65536}
	if ok0 {
		sizes = append([]int64{int64(m0.pageSize)}, sizes...)
	}
	for _, ps := range sizes {
		if m1, ok1 = parseMeta(f, ps); ok1 {
			break
		}
	}
	var m meta
	switch {
	case ok0 && ok1:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case ok0:
		m = m0
	case ok1:
		m = m1
	default:
		return meta{}, fmt.Errorf("%w: no valid meta page (%d bytes)", ErrDamaged, size)
	}
	if need := int64(m.pgid) * int64(m.pageSize); size < need {
		return meta{}, fmt.Errorf("%w: truncated: %d bytes, its meta page names %d pages of %d bytes (%d bytes)",
			ErrDamaged, size, m.pgid, m.pageSize, need)
	}
	if m.pageSize < 512 || m.pgid < 2 {
		return meta{}, fmt.Errorf("%w: meta page names page size %d, %d pages", ErrDamaged, m.pageSize, m.pgid)
	}
	if err := Guard(func() error { return newWalker(f, m).walk(m.root, 0) }); err != nil {
		return meta{}, err
	}
	return m, nil
}

// Open is bolt.Open after precheck (it reads every page in use: about the
// cost of the freelist rebuild a writable broker open does anyway), with a
// fault or panic inside bbolt returned as ErrDamaged. A read-only open
// (opts.ReadOnly) of a file that does not exist is fs.ErrNotExist instead
// of a new file.
func Open(path string, mode os.FileMode, opts *bolt.Options) (db *bolt.DB, err error) {
	if opts != nil && opts.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
	}
	// Every page reachable from the root is checked on the raw file
	// first: a writable open walks them all to rebuild the freelist
	// (NoFreelistSync), in a goroutine of bbolt's own where a damaged page
	// is a panic nothing can recover.
	var timeout time.Duration
	if opts != nil {
		timeout = opts.Timeout
	}
	if _, err := precheck(path, timeout); err != nil {
		return nil, err
	}
	err = Guard(func() error {
		var oerr error
		db, oerr = bolt.Open(path, mode, opts)
		return oerr
	})
	return db, err
}

// lockShared takes a shared flock on f, waiting at most timeout (0: for
// ever) for another process's exclusive one, as bbolt does; it returns
// bbolt's ErrTimeout when the wait is over.
func lockShared(f *os.File, timeout time.Duration) error {
	start := time.Now()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if timeout > 0 && time.Since(start) > timeout {
			return bolterrors.ErrTimeout
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Guard runs fn (a transaction on a freshly opened file, say) and returns a
// memory fault or panic inside it as ErrDamaged instead of crashing.
func Guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: bbolt: %v", ErrDamaged, r)
		}
	}()
	return fn()
}
