package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"lakehouse/broker"
)

// Limits of Meta entries: the same as the bbolt Log's, so both refuse the
// same batches.
const (
	maxMetaKeyBytes   = 32 << 10 // bbolt's MaxKeySize
	maxMetaValueBytes = 1 << 20
)

// headerRoom is what a record may carry beyond MaxRecordBytes of key and
// value (headers, framing) and still fit the batch and message limits the
// Log sets on its client and on the topics it creates.
const headerRoom = 256 << 10

// endTimeout bounds ending a transaction once the records were produced:
// EndTransaction runs on a context detached from the caller's, because a
// canceled EndTxn leaves the outcome unknown.
const endTimeout = 30 * time.Second

// Log is a broker.Log kept in a Kafka cluster. It is safe for concurrent
// use; Appends run one transaction at a time.
type Log struct {
	cfg      Config
	maxBatch int32 // producer batch and topic message limit
	cl       *kgo.Client
	adm      *kadm.Client

	appendMu sync.Mutex    // one transaction at a time; Close takes it
	fenced   error         // under appendMu: the error that fenced this producer
	rr       atomic.Uint64 // round-robin for keyless AnyPartition records
	closed   atomic.Bool

	topicsMu sync.Mutex
	topics   map[string]*topicMeta // partition counts, IDs and leaders

	cursorsMu sync.Mutex
	cursors   map[topicPartition]*cursor

	metaMu   sync.Mutex // serializes Meta's catching up
	metaNext int64      // meta topic offset up to which metaVals is read
	metaVals map[string][]byte

	waits waiters

	stop   context.CancelFunc // ends background work (the Wait poller)
	bg     context.Context
	closer sync.Once
}

var _ broker.Log = (*Log)(nil)

// Open connects to the cluster, creates the meta topic if it is missing
// (one partition, cleanup.policy=compact) and registers the
// TransactionalID, which fences older producers with it and aborts their
// open transaction (neither with Config.ReadOnly). It fails at once if no seed broker answers (or
// accepts the TLS or SASL settings), and if the rest cannot be done
// before ctx ends.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Seeds) == 0 {
		return nil, errors.New("open kafka log: no seed brokers")
	}
	codec, err := cfg.codec()
	if err != nil {
		return nil, fmt.Errorf("open kafka log: %w", err)
	}
	maxBatch := max(cfg.MaxRecordBytes, maxMetaKeyBytes+maxMetaValueBytes) + headerRoom
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Seeds...),
		kgo.ClientID(cfg.ClientID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// Compressed, to keep months of events on a small cluster's
		// disks; the partitions' key and value bytes are then unknown
		// (Offsets), and a byte-capped reader looks at the records.
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerBatchMaxBytes(int32(maxBatch)),
		kgo.ProducerLinger(0),
	}
	if !cfg.ReadOnly && !cfg.NoAppend {
		opts = append(opts, kgo.TransactionalID(cfg.TransactionalID))
	}
	if cfg.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg.TLS.Clone()))
	}
	if cfg.SASL != nil {
		opts = append(opts, kgo.SASL(cfg.SASL))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("open kafka log: %w", err)
	}
	bg, stop := context.WithCancel(context.Background())
	l := &Log{
		cfg:      cfg,
		maxBatch: int32(maxBatch),
		cl:       cl,
		adm:      kadm.NewClient(cl),
		topics:   map[string]*topicMeta{},
		cursors:  map[topicPartition]*cursor{},
		metaVals: map[string][]byte{},
		bg:       bg,
		stop:     stop,
	}
	l.waits.init()
	// Fail at once, with the reason, when no seed answers (a wrong
	// address, TLS or credentials), rather than retry until ctx ends.
	if err := cl.Ping(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("open kafka log: no broker of %v answers: %w", cfg.Seeds, err)
	}
	if cfg.ReadOnly {
		return l, nil
	}
	if err := l.createMetaTopic(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("open kafka log: %w", err)
	}
	if cfg.NoAppend {
		return l, nil
	}
	// InitProducerID now rather than at the first Append: it is what
	// fences a zombie with the same TransactionalID and aborts the
	// transaction it left open.
	if _, _, err := cl.ProducerID(ctx); err != nil {
		l.Close()
		if isFenced(err) {
			err = fmt.Errorf("%w: %w", broker.ErrFenced, err)
		}
		return nil, fmt.Errorf("open kafka log: init producer %q: %w", cfg.TransactionalID, err)
	}
	return l, nil
}

// SparseOffsets implements broker.Sparse: transaction markers and aborted
// records take offsets that no Read returns.
func (l *Log) SparseOffsets() bool { return true }

// Close implements broker.Log: it waits for an Append in flight, wakes
// every Wait with broker.ErrClosed and closes the connections. Reads in
// flight fail.
func (l *Log) Close() error {
	l.closer.Do(func() {
		l.appendMu.Lock()
		l.closed.Store(true)
		l.appendMu.Unlock()
		l.stop()
		l.cl.Close()
	})
	return nil
}

// isFenced reports whether err says a newer producer with our
// TransactionalID took over.
func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, errAbortedBehind)
}

// errAbortedBehind marks a commit refused because our open transaction
// had been aborted by the coordinator: the producer is fenced.
var errAbortedBehind = errors.New("our open transaction was aborted by the coordinator")

// checkOpen returns broker.ErrClosed after Close.
func (l *Log) checkOpen() error {
	if l.closed.Load() {
		return broker.ErrClosed
	}
	return nil
}

// checkWritable is checkOpen for the calls that write; append says the
// call appends records (which NoAppend forbids too).
func (l *Log) checkWritable(op string, append bool) error {
	if err := l.checkOpen(); err != nil {
		return err
	}
	if l.cfg.ReadOnly || (append && l.cfg.NoAppend) {
		return fmt.Errorf("%s: %w", op, ErrReadOnly)
	}
	return nil
}

// ctxErr returns ctx's error if ctx ended (naming err, the failure that
// had kept the request retrying, if any), else ErrClosed if the log was
// closed, else err: a request that failed because its context ended
// reports that, as the Log contract asks.
func (l *Log) ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if err != nil && !errors.Is(err, cerr) {
			return fmt.Errorf("%w (before: %v)", cerr, err)
		}
		return cerr
	}
	if l.closed.Load() {
		return broker.ErrClosed
	}
	return err
}
