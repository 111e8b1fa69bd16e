package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/pprof"
	"sort"
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

// CheckFile reads every page of the broker file at path (it must not be
// open for writing, in this process or another: it waits for the file
// lock at most DefaultOpenTimeout), the full check no open does: see
// boltfile.Check. A damaged file is an error naming it, wrapping
// ErrNotBroker and boltfile.ErrDamaged, with the way out.
func CheckFile(path string) (boltfile.Summary, error) {
	s, err := boltfile.Check(path, DefaultOpenTimeout)
	switch {
	case errors.Is(err, boltfile.ErrDamaged):
		return s, fmt.Errorf("check broker %s: %w: %w: %s", path, ErrNotBroker, err, wayOut)
	case errors.Is(err, bolterrors.ErrTimeout):
		return s, fmt.Errorf("check broker %s: %w", path, err)
	case err != nil:
		return s, fmt.Errorf("check broker %s: %w", path, err)
	}
	return s, nil
}

func (d *DB) init(existed bool) error {
	// A corrupt page can make bbolt panic or fault while reading; it is
	// reported as an error naming the file instead of crashing the process.
	err := boltfile.Guard(func() error {
		if d.opts.ReadOnly {
			return d.db.View(d.readFormat)
		}
		// A healthy broker file is not written by opening it (a commit
		// would bump its txid): only a new one gets its buckets.
		if existed {
			if err := d.db.View(d.readFormat); err == nil {
				return nil
			}
			d.topics = map[string]int{}
		}
		return d.db.Update(func(tx *bolt.Tx) error { return d.initTx(tx, existed) })
	})
	if errors.Is(err, boltfile.ErrDamaged) {
		return damaged(d.path, err)
	}
	return err
}

// readFormat checks the format marker and loads the topics (read-only).
func (d *DB) readFormat(tx *bolt.Tx) error {
	info := tx.Bucket(bucketInfo)
	if info == nil {
		return fmt.Errorf("open broker %s: %w: bbolt file without broker format marker", d.path, ErrNotBroker)
	}
	if err := d.checkFormat(info); err != nil {
		return err
	}
	if tx.Bucket(bucketMeta) == nil {
		return fmt.Errorf("open broker %s: %w: no meta bucket", d.path, ErrNotBroker)
	}
	if err := d.loadTopics(tx); err != nil {
		return err
	}
	return d.loadTail(tx)
}

func (d *DB) initTx(tx *bolt.Tx, existed bool) error {
	info := tx.Bucket(bucketInfo)
	if info == nil {
		hasOther := false
		_ = tx.ForEach(func([]byte, *bolt.Bucket) error { hasOther = true; return nil })
		if hasOther || existed && tx.Size() > 4*int64(d.db.Info().PageSize) {
			return fmt.Errorf("open broker %s: %w: bbolt file without broker format marker", d.path, ErrNotBroker)
		}
		var err error
		if info, err = tx.CreateBucket(bucketInfo); err != nil {
			return err
		}
		if err := info.Put(keyFormat, []byte(formatValue)); err != nil {
			return err
		}
	}
	if err := d.checkFormat(info); err != nil {
		return err
	}
	for _, b := range [][]byte{bucketTopics, bucketMeta} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	if err := d.loadTopics(tx); err != nil {
		return err
	}
	return d.loadTail(tx)
}

// checkFormat accepts a file of format 1, 2 or 3 and notes which.
func (d *DB) checkFormat(info *bolt.Bucket) error {
	switch got := string(info.Get(keyFormat)); got {
	case formatValue:
		d.formatOld.Store(false)
	case formatV1, formatV2:
		d.formatOld.Store(true)
	default:
		return fmt.Errorf("open broker %s: %w: format %q, want %q, %q or %q", d.path, ErrNotBroker, got, formatValue, formatV2, formatV1)
	}
	return nil
}

// markFormat marks a file of format 1 or 2 format 3 in tx, a transaction
// that writes what they cannot read (batches, a state with stored bytes, a
// tail). The mark is noted as done only once tx committed (see wrote).
func (d *DB) markFormat(tx *bolt.Tx) error {
	if !d.formatOld.Load() {
		return nil
	}
	if err := tx.Bucket(bucketInfo).Put(keyFormat, []byte(formatValue)); err != nil {
		return fmt.Errorf("mark %s format 3: %w", d.path, err)
	}
	return nil
}

// wrote notes that a transaction that called markFormat committed.
func (d *DB) wrote() { d.formatOld.Store(false) }

func (d *DB) loadTopics(tx *bolt.Tx) error {
	tb := tx.Bucket(bucketTopics)
	if tb == nil {
		return fmt.Errorf("open broker %s: %w: no topics bucket", d.path, ErrNotBroker)
	}
	return tb.ForEach(func(k, v []byte) error {
		if len(v) != 4 {
			return fmt.Errorf("open broker %s: %w: bad topic entry %q", d.path, ErrNotBroker, k)
		}
		d.topics[string(k)] = int(binary.BigEndian.Uint32(v))
		return nil
	})
}

// Path returns the database file's path.
func (d *DB) Path() string { return d.path }

func topicBucketName(topic string) []byte { return append([]byte("t:"), topic...) }

func partKey(prefix byte, p int) []byte {
	k := []byte{prefix, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(k[1:], uint32(p))
	return k
}

// CreateTopic implements Log.
func (d *DB) CreateTopic(ctx context.Context, topic string, partitions int) error {
	if topic == "" || partitions <= 0 {
		return fmt.Errorf("create topic %q: need a name and at least one partition", topic)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if n, ok := d.topics[topic]; ok {
		if n != partitions {
			return fmt.Errorf("create topic %q with %d partitions (has %d): %w", topic, partitions, n, ErrPartitionCount)
		}
		return nil
	}
	err := d.update(func(tx *bolt.Tx) error {
		if err := d.markFormat(tx); err != nil {
			return err
		}
		tb, err := tx.CreateBucket(topicBucketName(topic))
		if err != nil {
			return err
		}
		for p := 0; p < partitions; p++ {
			if _, err := tb.CreateBucket(partKey('r', p)); err != nil {
				return err
			}
			if err := tb.Put(partKey('s', p), partState{}.encode()); err != nil {
				return err
			}
		}
		v := make([]byte, 4)
		binary.BigEndian.PutUint32(v, uint32(partitions))
		return tx.Bucket(bucketTopics).Put([]byte(topic), v)
	})
	if err != nil {
		return fmt.Errorf("create topic %q: %w", topic, err)
	}
	d.wrote()
	d.topics[topic] = partitions
	return nil
}

func (d *DB) partitions(topic string) (int, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return 0, ErrClosed
	}
	n, ok := d.topics[topic]
	if !ok {
		return 0, fmt.Errorf("topic %q: %w", topic, ErrUnknownTopic)
	}
	return n, nil
}

// Topics implements Log.
func (d *DB) Topics(ctx context.Context) ([]TopicInfo, error) {
	d.mu.RLock()
	names := make([]string, 0, len(d.topics))
	for n := range d.topics {
		names = append(names, n)
	}
	d.mu.RUnlock()
	sort.Strings(names)
	out := make([]TopicInfo, 0, len(names))
	for _, n := range names {
		offs, err := d.Offsets(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, TopicInfo{Name: n, Partitions: offs})
	}
	return out, nil
}

// Offsets implements Log.
func (d *DB) Offsets(ctx context.Context, topic string) ([]PartitionOffsets, error) {
	n, err := d.partitions(topic)
	if err != nil {
		return nil, err
	}
	out := make([]PartitionOffsets, n)
	// The tail first, then the states: see tail.go.
	tails := make([]tailPart, n)
	for p := range tails {
		tails[p], _ = d.tailOf(topic, p)
	}
	err = d.view(func(tx *bolt.Tx) error {
		tb := tx.Bucket(topicBucketName(topic))
		for p := 0; p < n; p++ {
			st, err := decodeState(tb.Get(partKey('s', p)))
			if err != nil {
				return fmt.Errorf("partition %d state: %w", p, err)
			}
			out[p] = PartitionOffsets{Partition: p, Start: st.start, End: st.end, Bytes: st.bytes, Stored: st.stored}
			if t := tails[p]; t.end() > st.end {
				kv, enc := t.beyond(st.end)
				out[p].End = t.end()
				out[p].Bytes += kv
				out[p].Stored += enc
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("offsets of %q: %w", topic, err)
	}
	return out, nil
}

// Meta implements Log.
func (d *DB) Meta(ctx context.Context, key string) ([]byte, error) {
	if v, ok := d.tailMeta(key); ok { // newer than the meta bucket's, or equal
		return append([]byte{}, v...), nil
	}
	var v []byte
	err := d.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta).Get([]byte(key)); b != nil {
			v = append([]byte{}, b...)
		}
		return nil
	})
	return v, err
}

// Read implements Log.
func (d *DB) Read(ctx context.Context, topic string, partition int, from int64, max int) ([]Message, error) {
	var out []Message
	var read int64
	defer func() { d.noteMapped(read) }()
	err := d.eachRecord("read", topic, partition, from, max, true, func(want int64) { out = make([]Message, 0, want) },
		func(off int64, r storedRecord) error {
			m := Message{Topic: topic, Partition: partition, Offset: off}
			decode := decodeRecord
			if r.owned {
				decode = decodeOwned
			}
			if err := decode(r.enc, &m); err != nil {
				return err
			}
			out = append(out, m)
			read += r.stored
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Sizes implements Sizer. It reads only each record's length prefixes (a
// record of the first format) or its batch's header, so the values' pages
// are not read and no batch is decompressed.
func (d *DB) Sizes(ctx context.Context, topic string, partition int, from int64, max int) ([]int64, error) {
	var out []int64
	err := d.eachRecord("sizes", topic, partition, from, max, false, func(want int64) { out = make([]int64, 0, want) },
		func(_ int64, r storedRecord) error {
			out = append(out, r.kv)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// storedRecord is one record as eachRecord finds it.
type storedRecord struct {
	enc    []byte // its encoding (encodeRecord); nil unless values were asked for
	owned  bool   // enc is the caller's (a decompressed batch), not the transaction's
	kv     int64  // len(Key)+len(Value)
	stored int64  // file bytes read for it: a first-format record's, a batch's on its first record read
}

// eachRecord calls fn with each stored record of topic/partition from
// offset from, at most max of them (0: up to the end), in one read
// transaction; first it calls start with how many there will be. With
// values, fn gets each record's encoding (batches are decompressed);
// without, only its size. It refuses an offset outside the partition's
// [start, end] and reports a gap, a short range or a damaged batch as a
// corrupt log, naming the file. op names the operation in errors.
//
// A partition's records are, in offset order: those of the first format
// (one bbolt value per record, bucket 'r', written before batches), the
// sealed batches (bucket 'z'), the open records (bucket 'r' again, one
// value per record, not yet sealed in a batch: see seal), then those of the
// tail (tail.go), which the partition's state does not count.
func (d *DB) eachRecord(op, topic string, partition int, from int64, max int, values bool, start func(want int64), fn func(off int64, r storedRecord) error) error {
	n, err := d.partitions(topic)
	if err != nil {
		return err
	}
	if partition < 0 || partition >= n {
		return fmt.Errorf("%s %s/%d: %w", op, topic, partition, ErrBadPartition)
	}
	tail, _ := d.tailOf(topic, partition) // before the transaction: see tail.go
	return d.view(func(tx *bolt.Tx) error {
		tb := tx.Bucket(topicBucketName(topic))
		st, err := decodeState(tb.Get(partKey('s', partition)))
		if err != nil {
			return err
		}
		stored := st.end // the records of the file's partition end here, the tail's after
		if tail.from > st.end {
			return fmt.Errorf("%s %s/%d in %s: tail from %d beyond the end %d: %w", op, topic, partition, d.path, tail.from, st.end, errCorruptRecord)
		}
		if tail.end() > st.end {
			st.end = tail.end()
		}
		switch {
		case from < st.start:
			return fmt.Errorf("%s %s/%d at %d (start %d): %w", op, topic, partition, from, st.start, ErrOffsetTrimmed)
		case from > st.end:
			return fmt.Errorf("%s %s/%d at %d (end %d): %w", op, topic, partition, from, st.end, ErrOffsetOutOfRange)
		}
		want := st.end - from
		if max > 0 && int64(max) < want {
			want = int64(max)
		}
		if want == 0 {
			return nil
		}
		start(want)
		next, end := from, from+want
		inFile := min(end, stored)
		plain := func(bucket []byte) error {
			rb := tb.Bucket(bucket)
			if rb == nil {
				return nil
			}
			c := rb.Cursor()
			for k, v := c.Seek(offsetKey(next)); k != nil && next < inFile; k, v = c.Next() {
				if int64(binary.BigEndian.Uint64(k)) != next {
					break // the rest is elsewhere
				}
				r := storedRecord{enc: v, stored: int64(len(v))}
				if !values {
					if r.kv, err = recordSize(v); err != nil {
						return fmt.Errorf("%s %s/%d@%d in %s: %w", op, topic, partition, next, d.path, err)
					}
					r.enc = nil
				}
				if err := fn(next, r); err != nil {
					return fmt.Errorf("%s %s/%d@%d in %s: %w", op, topic, partition, next, d.path, err)
				}
				next++
			}
			return nil
		}
		if err := plain(partKey('r', partition)); err != nil {
			return err
		}
		if next < inFile {
			if next, err = d.eachBatched(tb.Bucket(partKey('z', partition)), op, topic, partition, next, inFile, values, fn); err != nil {
				return err
			}
		}
		if next < inFile {
			if err := plain(partKey('r', partition)); err != nil {
				return err
			}
		}
		for ; next >= inFile && next < end; next++ {
			if next < tail.from || next >= tail.end() {
				break
			}
			i := next - tail.from
			// Shared by every reader: decoded as a copy. In memory: nothing of the map read.
			r := storedRecord{kv: tail.kvs[i]}
			if values {
				r.enc = tail.encs[i]
			}
			if err := fn(next, r); err != nil {
				return fmt.Errorf("%s %s/%d@%d (tail) in %s: %w", op, topic, partition, next, d.path, err)
			}
		}
		if next < end {
			return fmt.Errorf("%s %s/%d in %s: offset %d missing (%d records before end %d): %w",
				op, topic, partition, d.path, next, end-next, end, errCorruptRecord)
		}
		return nil
	})
}

// seekBatch returns the batch of zb that holds off or, when none does, the
// one before or after it (the caller checks the range); nil when zb holds
// none.
func seekBatch(c *bolt.Cursor, off int64) (k, v []byte) {
	k, v = c.Seek(offsetKey(off))
	switch {
	case k == nil:
		return c.Last()
	case batchKeyOffset(k) > off:
		if pk, pv := c.Prev(); pk != nil {
			return pk, pv
		}
	}
	return k, v
}

// eachBatched is eachRecord over the sealed batches of bucket zb, from
// offset next until end or the first offset no batch holds (the open
// records after them); it returns that offset.
func (d *DB) eachBatched(zb *bolt.Bucket, op, topic string, partition int, next, end int64, values bool, fn func(off int64, r storedRecord) error) (int64, error) {
	if zb == nil {
		return next, nil
	}
	c := zb.Cursor()
	for k, v := seekBatch(c, next); k != nil && next < end; k, v = c.Next() {
		first := batchKeyOffset(k)
		h, err := parseBatch(v)
		if err != nil {
			return next, fmt.Errorf("%s %s/%d: batch at offsets %d.. in %s: %w: %w", op, topic, partition, first, d.path, ErrNotBroker, err)
		}
		last := first + int64(len(h.recs)) - 1
		if next < first || next > last {
			return next, nil
		}
		var raw []byte
		if values {
			if raw, err = h.raw(); err != nil {
				return next, fmt.Errorf("%s %s/%d: batch at offsets %d..%d in %s: %w: %w", op, topic, partition, first, last, d.path, ErrNotBroker, err)
			}
		}
		pos := 0
		for _, r := range h.recs[:next-first] {
			pos += r.enc
		}
		stored := int64(len(v))
		for _, br := range h.recs[next-first:] {
			if next >= end {
				break
			}
			r := storedRecord{owned: true, kv: br.kv, stored: stored}
			stored = 0
			if values {
				r.enc = raw[pos : pos+br.enc : pos+br.enc]
			}
			pos += br.enc
			if err := fn(next, r); err != nil {
				return next, fmt.Errorf("%s %s/%d@%d (batch at offsets %d..%d) in %s: %w", op, topic, partition, next, first, last, d.path, err)
			}
			next++
		}
	}
	return next, nil
}

// Wait implements Log.
func (d *DB) Wait(ctx context.Context, topic string, partition int, offset int64) error {
	for {
		d.notifyMu.Lock()
		ch := d.changed
		d.notifyMu.Unlock()
		offs, err := d.Offsets(ctx, topic)
		if err != nil {
			return err
		}
		if partition < 0 || partition >= len(offs) {
			return fmt.Errorf("wait %s/%d: %w", topic, partition, ErrBadPartition)
		}
		if offs[partition].End > offset {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-d.stopped:
			return ErrClosed
		}
	}
}

func (d *DB) notify() {
	d.notifyMu.Lock()
	close(d.changed)
	d.changed = make(chan struct{})
	d.notifyMu.Unlock()
}

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
