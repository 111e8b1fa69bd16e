package broker

import (
	"context"
	"errors"
	"hash/fnv"
	"time"
)

// Record is one message as a producer hands it to Append. Value and Key are
// stored byte for byte; the broker never parses them.
type Record struct {
	Topic string
	// Partition is the target partition, or AnyPartition to let the broker
	// choose one from a hash of Key (round-robin over the call when Key is empty).
	Partition int
	Key       []byte
	Value     []byte
	Timestamp time.Time
	Headers   []Header
}

// AnyPartition asks Append to pick the partition from the record's key.
const AnyPartition = -1

// Header is one key/value pair carried with a record.
type Header struct {
	Key   string
	Value []byte
}

// Message is a stored record as a reader sees it.
type Message struct {
	Topic     string
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp time.Time
	Headers   []Header
}

// Header returns the value of the first header named key, or nil.
func (m Message) Header(key string) []byte {
	for _, h := range m.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return nil
}

// Position is where Append stored one record.
type Position struct {
	Partition int
	Offset    int64
}

// Meta is one piece of producer metadata (for example a source's resume
// position) written in the same transaction as the records of a Batch.
type Meta struct {
	Key   string
	Value []byte
}

// Batch is the unit of Append: all its records and all its metadata become
// durable together, or none of them does.
type Batch struct {
	Records []Record
	Meta    []Meta
}

// PartitionOffsets describes the readable range of one partition:
// offsets Start..End-1 are stored; End is the offset the next record gets.
type PartitionOffsets struct {
	Partition int
	Start     int64
	End       int64
	// Bytes is the key and value bytes of the records in the readable
	// range, exactly, or UnknownBytes when the Log cannot tell without
	// reading them. *DB counts them as it stores and trims; package
	// kafka's Log reports UnknownBytes, because its batches are
	// compressed on the brokers, whose sizes are then no bound on the
	// bytes a reader gets back. A consumer that bounds a batch in bytes
	// must not take an unknown Bytes for a small one.
	Bytes int64
	// Stored is what the readable range takes in the log's storage
	// (compressed), when the Log knows it (0 otherwise): *DB's records
	// and batches as its file encodes them; on Kafka the partition's size
	// on its broker, aborted records and transaction markers included.
	Stored int64
}

// UnknownBytes is PartitionOffsets.Bytes of a Log that cannot tell the
// key and value bytes a partition holds without reading its records.
const UnknownBytes int64 = -1

// BytesKnown reports whether Bytes holds the partition's key and value
// bytes (not UnknownBytes).
func (p PartitionOffsets) BytesKnown() bool { return p.Bytes >= 0 }

// TopicInfo describes a topic and its partitions.
type TopicInfo struct {
	Name       string
	Partitions []PartitionOffsets
}

// Messages returns the number of readable messages across all partitions.
func (t TopicInfo) Messages() int64 {
	var n int64
	for _, p := range t.Partitions {
		n += p.End - p.Start
	}
	return n
}

// Stored returns the number of messages the topic ever stored: those
// readable plus those retention trimmed.
func (t TopicInfo) Stored() int64 {
	n := t.Messages()
	for _, p := range t.Partitions {
		n += p.Trimmed()
	}
	return n
}

// Trimmed returns the number of messages retention removed from the
// partition. Offsets are dense from 0 and never reused, so they are the
// offsets below Start.
func (p PartitionOffsets) Trimmed() int64 { return p.Start }

// Log is the partitioned append log the rest of the appliance consumes. The
// bbolt implementation (*DB) is the default; a Kafka adapter can implement
// the same interface. RunLogContract (logtest.go) is the contract suite every
// implementation must pass.
//
// Every method that waits or does I/O takes a context first.
type Log interface {
	// CreateTopic creates a topic with a fixed number of partitions. Creating
	// an existing topic with the same count is a no-op; with another count it
	// is ErrPartitionCount.
	CreateTopic(ctx context.Context, topic string, partitions int) error
	// Topics lists every topic with its partitions' offsets, sorted by name.
	Topics(ctx context.Context) ([]TopicInfo, error)
	// Offsets returns the offsets of each partition of topic.
	// Returns ErrUnknownTopic if the topic does not exist.
	Offsets(ctx context.Context, topic string) ([]PartitionOffsets, error)
	// Append stores a batch atomically and durably: when it returns nil every
	// record and every Meta entry is fsync'd; after a crash either all of the
	// batch is readable or none of it. It returns each record's position, in
	// the order of b.Records. Fails without storing anything on
	// ErrUnknownTopic, ErrBadPartition or ErrRecordTooLarge.
	Append(ctx context.Context, b Batch) ([]Position, error)
	// Meta returns producer metadata stored by Append, or nil, nil if the key
	// was never written.
	Meta(ctx context.Context, key string) ([]byte, error)
	// Read returns up to max messages of one partition starting at offset
	// from. It returns an empty slice when from == End, ErrOffsetTrimmed when
	// from < Start, ErrOffsetOutOfRange when from > End.
	Read(ctx context.Context, topic string, partition int, from int64, max int) ([]Message, error)
	// Wait blocks until the partition's End is greater than offset, or ctx is
	// done (returning ctx.Err()). It does not poll.
	Wait(ctx context.Context, topic string, partition int, offset int64) error
	// Close releases the log. Appends in flight finish or fail first.
	Close() error
}

// Sizer is implemented by a Log that can tell how large stored records are
// without reading them, so that a consumer can bound a batch in bytes
// before it reads it (*DB implements it; a consumer falls back to Read for
// a Log that does not).
type Sizer interface {
	// Sizes returns len(Key)+len(Value) of up to max records of one
	// partition starting at offset from, in offset order: fewer when the
	// partition ends first, none when from == End. Errors as Read.
	Sizes(ctx context.Context, topic string, partition int, from int64, max int) ([]int64, error)
}

// Sparse is implemented by a Log whose offsets may skip: on Kafka a
// transaction's commit marker takes an offset, an aborted transaction's
// records are never readable, and compaction removes records. Offsets still
// only grow within a partition, but End-Start is then an upper bound on the
// records held, not their count. A Log without it (the bbolt *DB) has dense
// offsets: every offset in Start..End-1 holds a record.
//
// On a sparse Log, Read from an offset that holds no record returns the
// next records that exist; it returns no records only when none is
// readable in from..End-1.
type Sparse interface {
	SparseOffsets() bool
}

// IsSparse reports whether l's offsets may skip.
func IsSparse(l Log) bool {
	s, ok := l.(Sparse)
	return ok && s.SparseOffsets()
}

// PartitionFor is the partition of n that Append picks for a record with
// key and AnyPartition: the FNV-1a hash of the key modulo n. Every Log uses
// it, so a key lands on the same partition whatever the broker.
func PartitionFor(key []byte, n int) int {
	h := fnv.New32a()
	h.Write(key)
	return int(h.Sum32() % uint32(n))
}

// Errors returned by the broker. Match them with errors.Is.
var (
	// ErrUnknownTopic: the topic was never created.
	ErrUnknownTopic = errors.New("broker: unknown topic")
	// ErrBadPartition: the partition number is outside the topic's range.
	ErrBadPartition = errors.New("broker: partition out of range")
	// ErrPartitionCount: CreateTopic with a count that differs from the stored one.
	ErrPartitionCount = errors.New("broker: topic exists with a different partition count")
	// ErrRecordTooLarge: a record's key plus value exceeds MaxRecordBytes; the
	// whole Append call is rejected.
	ErrRecordTooLarge = errors.New("broker: record too large")
	// ErrBadMeta: a Meta key is empty or longer than the store's key limit,
	// or its value is too large; the whole Append call is rejected, and no
	// other caller's records with it.
	ErrBadMeta = errors.New("broker: bad metadata key or value")
	// ErrOffsetTrimmed: the offset was removed by retention.
	ErrOffsetTrimmed = errors.New("broker: offset trimmed by retention")
	// ErrOffsetOutOfRange: the offset is beyond the partition's end.
	ErrOffsetOutOfRange = errors.New("broker: offset beyond end of partition")
	// ErrNotBroker: the file exists but is not a broker database (or is corrupt).
	ErrNotBroker = errors.New("broker: not a broker database")
	// ErrFenced: another producer with the same identity started, so this
	// one may no longer append (Kafka's transactional fencing).
	ErrFenced = errors.New("broker: producer fenced by a newer one")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("broker: closed")
)
