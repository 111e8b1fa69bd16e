// Package boltfile opens bbolt files defensively, so that a damaged file is
// an error naming it and never a crash or a silently new database.
//
// bbolt trusts its file: a truncated file makes it fault (SIGBUS) on pages
// past the end that its meta page names, a garbled page makes it panic
// ("Page expected to be: 5, but self identifies as ...", "invalid freelist
// page"), and an empty file is initialised as a new database.
//
// Open checks, before bbolt maps the file, what costs the same whatever the
// file's size: not empty, a valid meta page, not shorter than the pages
// that meta names, the root bucket's page well formed, and the freelist
// pages bbolt reads at a writable open (each id within the file, sorted,
// none twice). It turns a fault or panic while bbolt opens the file into
// ErrDamaged. A page deeper in the tree is checked when a transaction first
// reads it: every transaction on a file opened here must run under Guard,
// which turns the panic or fault of a damaged page into ErrDamaged. So a
// garbled page is refused at Open or by the first transaction that reaches
// it, never a crash.
//
// Check is the full check, an explicit operation (`verify` runs it), never
// part of an open: it reads every page in use and requires each page of the
// file to be the tree's (reached once), the freelist's, or listed free.
//
// One open still reads every page: a writable open of a file whose
// freelist was not persisted (written with NoFreelistSync, as the broker
// did before it persisted its freelist) makes bbolt rebuild the freelist by
// walking the whole tree, in a goroutine of its own where a damaged page is
// a panic nothing can recover. Open walks such a file as Check does first;
// bbolt then persists the freelist (unless the caller still asks for
// NoFreelistSync), so it happens once. Nothing here writes to the file.
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
	freelist uint64 // the freelist's page, noFreelist when not persisted
	pgid     uint64 // high-water mark: pages in use are below it
	txid     uint64
}

// noFreelist is the freelist page id of a meta page written with
// NoFreelistSync.
const noFreelist = ^uint64(0)

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
	return meta{pageSize: le.Uint32(m[8:]), root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]), pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
}

// inspect opens an existing file without mapping it, under a shared lock
// (waiting at most timeout), finds its newest valid meta page and runs fn
// on them: ErrEmpty for an empty file, ErrDamaged when neither meta page
// is valid or the file is shorter than the pages that meta names. A file
// that does not exist is not an error (bbolt creates it): fn is not run.
func inspect(path string, timeout time.Duration, fn func(f *os.File, m meta) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	// The pages are read under a shared lock, so a file another process
	// is writing is "locked", never "damaged"; the lock is released (with
	// f) before bbolt takes its own.
	if err := lockShared(f, timeout); err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == 0 {
		return ErrEmpty
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
		return fmt.Errorf("%w: no valid meta page (%d bytes)", ErrDamaged, size)
	}
	if need := int64(m.pgid) * int64(m.pageSize); size < need {
		return fmt.Errorf("%w: truncated: %d bytes, its meta page names %d pages of %d bytes (%d bytes)",
			ErrDamaged, size, m.pgid, m.pageSize, need)
	}
	if m.pageSize < 512 || m.pgid < 2 {
		return fmt.Errorf("%w: meta page names page size %d, %d pages", ErrDamaged, m.pageSize, m.pgid)
	}
	return Guard(func() error { return fn(f, m) })
}

// precheck is what Open checks before bbolt maps the file: the root
// bucket's page and the freelist's pages, a few pages whatever the file's
// size, or every page reachable from the root when walkAll says bbolt is
// about to walk them itself (see Open).
func precheck(path string, timeout time.Duration, walkAll func(meta) bool) error {
	return inspect(path, timeout, func(f *os.File, m meta) error {
		w := newWalker(f, m)
		if walkAll(m) {
			return w.walk(m.root, 0)
		}
		b, err := w.page(m.root, branchPage|leafPage, true)
		if err != nil {
			return err
		}
		if err := w.node(b, m.root, 0, false); err != nil {
			return err
		}
		if m.freelist != noFreelist {
			if _, err := w.freelist(m.freelist, true); err != nil {
				return err
			}
		}
		return nil
	})
}

// Summary is what Check found.
type Summary struct {
	PageSize  int
	Pages     uint64 // pages below the high-water mark, the two meta pages included
	Reachable uint64 // pages of the tree (overflow pages included)
	Free      uint64 // free pages and the freelist's own pages
}

// Check reads every page in use of the bbolt file at path, under a shared
// lock (waiting at most timeout), without mapping it: every page reachable
// from the root is a well-formed branch or leaf that names itself and is
// reached once; when the freelist is persisted, its pages are well formed,
// no page it lists is reachable, and every page of the file is the tree's,
// the freelist's or listed free (what bbolt's own consistency check
// requires). It returns ErrDamaged naming the first page that is not, or
// ErrEmpty; a file that does not exist is fs.ErrNotExist. It reads the
// whole file: an explicit check, never part of an open.
func Check(path string, timeout time.Duration) (Summary, error) {
	if _, err := os.Stat(path); err != nil {
		return Summary{}, err
	}
	var s Summary
	err := inspect(path, timeout, func(f *os.File, m meta) error {
		w := newWalker(f, m)
		s = Summary{PageSize: int(m.pageSize), Pages: m.pgid}
		if err := w.walk(m.root, 0); err != nil {
			return err
		}
		s.Reachable = w.reached
		if m.freelist == noFreelist {
			// Not persisted: bbolt takes every page not reached as free.
			s.Free = m.pgid - 2 - s.Reachable
			return nil
		}
		if _, err := w.freelist(m.freelist, true); err != nil {
			return err
		}
		s.Free = w.reached - s.Reachable
		for id := uint64(2); id < m.pgid; id++ {
			if !w.marked(id) {
				return fmt.Errorf("%w: page %d is neither reachable nor free", ErrDamaged, id)
			}
		}
		return nil
	})
	return s, locked(path, err)
}

// Open is bolt.Open after precheck, with a fault or panic inside bbolt
// returned as ErrDamaged. A read-only open (opts.ReadOnly) of a file that
// does not exist is fs.ErrNotExist instead of a new file.
func Open(path string, mode os.FileMode, opts *bolt.Options) (db *bolt.DB, err error) {
	readOnly := opts != nil && opts.ReadOnly
	if readOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
	}
	var timeout time.Duration
	if opts != nil {
		timeout = opts.Timeout
	}
	// A writable open of a file whose freelist is not persisted makes
	// bbolt rebuild the freelist by walking every page reachable from the
	// root, in a goroutine of bbolt's own where a damaged page is a panic
	// nothing can recover: those pages are checked on the raw file first.
	// A read-only open never loads the freelist.
	rebuilds := func(m meta) bool { return !readOnly && m.freelist == noFreelist }
	if err := precheck(path, timeout, rebuilds); err != nil {
		return nil, locked(path, err)
	}
	err = Guard(func() error {
		var oerr error
		db, oerr = bolt.Open(path, mode, opts)
		return oerr
	})
	if err != nil {
		return nil, locked(path, err)
	}
	if !readOnly {
		if err := writeOwner(path); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("record the owner of %s: %w", path, err)
		}
	}
	return db, nil
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

// Guard runs fn (a transaction, say) and returns a memory fault or panic
// inside it as ErrDamaged instead of crashing. bbolt rolls a transaction
// back when its function panics, so the file is left as it was; the fault
// must happen on fn's goroutine (bbolt reads a transaction's pages on the
// caller's).
func Guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: bbolt: %v", ErrDamaged, r)
		}
	}()
	return fn()
}
