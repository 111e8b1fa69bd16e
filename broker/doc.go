// Package broker is the appliance's partitioned, durable append log, embedded
// in one bbolt file (broker.db): the role Kafka plays in the original
// pipeline.
//
// It owns topics with a fixed number of partitions, dense per-partition
// offsets starting at 0, records (key, value, timestamp, headers) returned
// byte for byte (stored one by one, or with Options.Compress sealed into
// zstd batches of about 64 KiB once a partition's open records fill one,
// in the commit that fills it, the commits before it writing their records
// as one compressed frame of the open tail: see tail.go; files of every
// format stay readable),
// producer metadata (such as a source's resume position) committed
// in the same transaction as the records it covers, group commit, and
// retention.
//
// What survives a crash: every Append that returned nil. An Append is one
// bbolt transaction (shared with concurrent Appends through group commit);
// a transaction that had not finished committing is rolled back by bbolt on
// the next Open, so after a crash either all records and metadata of an
// Append are readable or none of them is. Offsets stay dense: a record is
// never visible without all records before it in its partition. bbolt's
// freelist is committed with every transaction too, so an Open, after a
// crash or not, reads a few pages whatever the log's size, never the whole
// file (a file written before the freelist was persisted is walked once).
//
// What a damaged file gets: an error naming the file and the way out,
// wrapping ErrNotBroker, never a panic, a fault or a new database. Open
// refuses an empty, truncated or foreign file, or one whose meta, root or
// freelist pages are damaged, and changes nothing; a damaged page deeper in
// the log is found by the first transaction that reads it (every
// transaction runs under internal/boltfile's Guard), which is rolled back.
// A compressed batch that fails its checksums or does not decompress is
// refused (ErrCorruptBatch, with ErrNotBroker), naming the file, the
// partition and its offsets; none of its records is returned. A damaged
// frame of the open tail makes Open refuse the file, naming the frame.
// CheckFile reads every page (`verify` runs it). Options.ReadOnly opens a
// file without ever writing to it. One caller's batch that the store would
// refuse (ErrBadMeta) fails only that caller, never the others of its
// group commit.
//
// Retention trims as fast as the appends reuse the space (see Retain), so
// the freelist every commit writes stays small.
//
// The Log interface is what the stream engine consumes; *DB is the bbolt
// implementation, package kafka the Kafka one, and package brokertest holds
// the contract suite every implementation passes. Kafka's offsets skip (a
// transaction's marker takes one): such a Log implements Sparse, and
// EachHeld, CountHeld and HeldCounter count the records a range holds
// instead of its offsets, on either kind.
package broker
