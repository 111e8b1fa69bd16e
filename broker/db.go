package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"lakehouse/internal/boltfile"
)

// Defaults for Options.
const (
	DefaultMaxRecordBytes = 1 << 20 // 1 MiB of key + value
	DefaultMaxGroupBytes  = 32 << 20
	DefaultOpenTimeout    = boltfile.LockTimeout
)

// formatValue identifies a broker database; Open refuses bbolt files
// without it. Format 3 adds the open tail (tail.go); format 2 stores
// records in compressed batches (batch.go); format 1 stored each record as
// it came. This version reads all three: the first transaction that writes
// to a file of an older format marks it format 3 (its old records stay as
// they are, readable, until retention trims them), so that an older binary
// refuses it by name instead of misreading it.
const (
	formatValue = "lakehouse-broker/3"
	formatV2    = "lakehouse-broker/2"
	formatV1    = "lakehouse-broker/1"
)

var (
	bucketInfo   = []byte("info")
	bucketTopics = []byte("topics")
	bucketMeta   = []byte("meta")
	keyFormat    = []byte("format")
)

// Options configures a DB. Zero fields take the Default* values.
type Options struct {
	// MaxRecordBytes bounds len(Key)+len(Value) of one record.
	MaxRecordBytes int
	// MaxGroupBytes bounds how many encoded bytes one group commit gathers.
	MaxGroupBytes int
	// OpenTimeout bounds the wait for the file lock held by another process.
	OpenTimeout time.Duration
	// ReleaseMappedBytes: after this many bytes of records were read,
	// appended or walked by retention, or once the process's resident
	// file-backed pages grew by this much, the broker releases the pages
	// of its memory map that reads and commits made resident (see
	// ReleaseMapped and noteMapped).
	// DefaultReleaseMappedBytes when 0; negative: never.
	ReleaseMappedBytes int64
	// ReadOnly opens an existing file without ever writing to it (a
	// shared lock; no bucket is created and Append fails), for commands
	// that only read.
	ReadOnly bool
	// Compress seals each partition's records into zstd-compressed batches
	// of about 64 KiB as they accumulate (see seal); off, records are
	// stored one by one as they came. Either way every format is read, and
	// turning it on or off is safe between opens.
	Compress bool
	// CompressBatchBytes: a partition's open records are sealed into
	// batches once they hold this many encoded bytes
	// (DefaultCompressBatchBytes when 0).
	CompressBatchBytes int
	// DiskReserve refuses appends (ReserveError, transient) while the file
	// system holding the file has less free space than this, so the space
	// left lets the queries drain what is stored; 0: no reserve. Trims and
	// deletes are never refused.
	DiskReserve int64
}

// DB is the bbolt implementation of Log. It is safe for concurrent use.
type DB struct {
	path string
	db   *bolt.DB
	opts Options

	mu     sync.RWMutex
	topics map[string]int // name -> partition count
	closed bool

	notifyMu sync.Mutex
	changed  chan struct{} // closed and replaced after every commit

	sendMu   sync.RWMutex  // held (read) while sending on appendCh; Close takes it to close the channel
	rr       atomic.Uint64 // round-robin counter for keyless records
	appendCh chan *appendReq
	stopped  chan struct{}

	mappedSinceRelease atomic.Int64 // record bytes read, appended or trimmed since the last ReleaseMapped
	residentAtRelease  atomic.Int64 // fileResident after the last ReleaseMapped (or Open)
	slabs              [][]byte     // encode buffers reused between group commits (committer goroutine only)

	formatOld        atomic.Bool      // the file is marked format 1 or 2: the next writing transaction marks it 3
	tailMu           sync.RWMutex     // guards tail
	tail             openTail         // the records and metadata of the tail bucket, decoded (tail.go)
	batchEnc         *zstd.Encoder    // committer goroutine only
	appended         atomic.Int64     // stored (compressed) record bytes committed since Open
	retainMu         sync.Mutex       // serialises Retain calls and guards retainSeen
	retainSeen       map[string]int64 // appended as each topic's last Retain saw it
	retainFreeBudget int64            // DefaultRetainFreePages unless a test sets it
}

var (
	_ Log   = (*DB)(nil)
	_ Sizer = (*DB)(nil)
)

// Open opens or creates the broker database at path. It returns an error
// wrapping ErrNotBroker (and naming the file) if the file exists but is not a
// bbolt database, is corrupt, or is a bbolt database of something else; it
// never silently starts fresh over an existing file.
func Open(path string, opts Options) (*DB, error) {
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if opts.MaxGroupBytes <= 0 {
		opts.MaxGroupBytes = DefaultMaxGroupBytes
	}
	if opts.CompressBatchBytes <= 0 {
		opts.CompressBatchBytes = DefaultCompressBatchBytes
	}
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = DefaultOpenTimeout
	}
	if opts.ReleaseMappedBytes == 0 {
		opts.ReleaseMappedBytes = DefaultReleaseMappedBytes
	}
	existed := false
	if st, err := os.Stat(path); err == nil {
		existed = true
		if st.IsDir() {
			return nil, fmt.Errorf("open broker %s: %w: a directory", path, ErrNotBroker)
		}
	}
	bdb, err := boltfile.Open(path, 0o600, &bolt.Options{
		Timeout:  opts.OpenTimeout,
		ReadOnly: opts.ReadOnly,
		// The freelist is persisted (bbolt's default: NoFreelistSync
		// false): without it, every writable open rebuilds it by walking
		// every page of the tree, which reads the whole log and leaves
		// it resident in the map before the first append. It costs a
		// freelist written at every commit, 8 bytes per free page (one
		// page at least): retention bounds the free pages (see Retain). A file written without it (by an older version)
		// is walked once, at its first writable open, then persisted.
		FreelistType: bolt.FreelistMapType,
		// Copy-on-write rewrites every page a commit touches (a leaf per
		// partition, their branches, the state and meta pages): at the real
		// stream's rate, about ten pages per commit of a few records, so
		// the page size sets the bytes written per commit: 8 KiB pages
		// write a quarter of what 32 KiB pages do, for appends a little
		// slower; 4 KiB pages append markedly slower still
		// (BenchmarkAppend). Fixed when the file is created.
		PageSize:        8 << 10,
		InitialMmapSize: 1 << 30, // address space only: avoids remapping (which blocks commits) as the file grows
	})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("open broker %s: %w", path, err)
		}
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open broker %s: %w", path, err)
		}
		if existed || errors.Is(err, boltfile.ErrDamaged) || errors.Is(err, bolterrors.ErrInvalid) ||
			errors.Is(err, bolterrors.ErrVersionMismatch) || errors.Is(err, bolterrors.ErrChecksum) {
			// bbolt refuses the file (bad magic, checksum, size...), or it
			// is damaged (empty, truncated, a garbled page): it is not a
			// broker database, or not one that can be read.
			return nil, damaged(path, err)
		}
		return nil, fmt.Errorf("open broker %s: %w", path, err)
	}
	d := &DB{
		path:             path,
		db:               bdb,
		opts:             opts,
		topics:           map[string]int{},
		changed:          make(chan struct{}),
		appendCh:         make(chan *appendReq, 1024),
		stopped:          make(chan struct{}),
		retainSeen:       map[string]int64{},
		retainFreeBudget: DefaultRetainFreePages,
		batchEnc:         newBatchEncoder(),
	}
	if err := d.init(existed); err != nil {
		_ = boltfile.Close(bdb)
		return nil, err
	}
	d.residentAtRelease.Store(fileResident())
	// The label tags CPU profiles (bench's per-stage split, go tool pprof
	// -tags): the commits are the broker's work, whichever caller waits.
	go pprof.Do(context.Background(), pprof.Labels("component", "broker"), func(context.Context) { d.commitLoop() })
	return d, nil
}

// damaged is the error for a broker file that cannot be opened, with the
// way out.
func damaged(path string, err error) error {
	return fmt.Errorf("open broker %s: %w: %w; nothing was changed: %s", path, ErrNotBroker, err, wayOut)
}

const wayOut = "stop the appliance, move the file away and restore it from a backup (starting without it loses the events bronze has not landed yet)"

// view and update run a bbolt transaction under boltfile.Guard. Open
// checks only the pages whose number does not grow with the log (meta,
// root, freelist); a damaged page deeper in the tree is found by the first
// transaction that reads it, where bbolt panics or faults: that is an
// error naming the file (wrapping ErrNotBroker and boltfile.ErrDamaged),
// the transaction rolled back, never a crash.
func (d *DB) view(fn func(*bolt.Tx) error) error {
	return d.guard(func() error { return d.db.View(fn) })
}

func (d *DB) update(fn func(*bolt.Tx) error) error {
	return d.guard(func() error { return d.db.Update(fn) })
}

func (d *DB) guard(fn func() error) error {
	err := boltfile.Guard(fn)
	if errors.Is(err, boltfile.ErrDamaged) {
		return fmt.Errorf("broker %s: %w: %w; the transaction was rolled back: %s", d.path, ErrNotBroker, err, wayOut)
	}
	return err
}

// Path returns the database file's path.
func (d *DB) Path() string { return d.path }

// Close implements Log: it stops accepting appends, lets queued ones finish
// and closes the file.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.sendMu.Lock()
	close(d.appendCh)
	d.sendMu.Unlock()
	<-d.stopped
	return boltfile.Close(d.db)
}
