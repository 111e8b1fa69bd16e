// Package kafka is the Kafka implementation of broker.Log: the appliance's
// partitioned log kept in a Kafka cluster (or anything that speaks its
// protocol with transactions, such as Redpanda) instead of the embedded
// bbolt file. It passes the same contract suite (broker/brokertest).
//
// It owns one transactional producer identity (Config.TransactionalID),
// the topics it creates, and the compacted meta topic (Config.MetaTopic)
// that holds the Meta entries of Append as records keyed by the meta key.
// It reads with read_committed isolation, and tells committed records
// from aborted ones by their transactions' commit and abort markers
// rather than by the list of aborted transactions a fetch response
// carries, which kfake leaves out of some responses (markers.go).
//
// What survives a crash: every Append that returned nil. An Append is one
// Kafka transaction holding its records and its Meta entries, committed
// with acks from all in-sync replicas (Kafka's durability is replication,
// not an fsync per write). A process killed between producing and
// committing leaves an open transaction: it holds back the partitions'
// End (the last stable offset) until the next Log opened with the same
// TransactionalID aborts it, which Open does before it returns (or until
// the cluster aborts it after the transaction timeout, franz-go's default
// of 40 s). Read-committed readers never see an aborted transaction's
// records nor its Meta, so after a crash either all records and metadata
// of an Append are readable or none is.
//
// Append produces its batches compressed with zstd (Config.Compression),
// which the brokers keep as they are, so a partition's size on them
// (PartitionOffsets.Stored) is no bound on the key and value bytes it
// holds: Offsets reports those as broker.UnknownBytes, and a reader that
// bounds a batch in bytes looks at the records.
//
// Offsets are sparse (the Log implements broker.Sparse): a transaction's
// commit or abort marker takes an offset of every partition it wrote, and
// aborted records keep theirs, so End-Start is only an upper bound on the
// records held. Offsets still grow within a partition and the records of
// one Append are contiguous in each partition they touch, as long as no
// other producer writes to those partitions.
//
// Fencing: Open registers the TransactionalID with the cluster, which
// fences any older producer using it. The older Log's next Append fails
// with an error wrapping broker.ErrFenced, stores nothing, and the Log
// stays fenced; only a new Open appends again. Every writing Log needs the
// identity, so two processes that append need two IDs; a Log opened with
// Config.ReadOnly or Config.NoAppend registers none and fences nobody (use
// them for commands that only read while the appliance runs, and for the
// processes that read and create topics but never append).
package kafka
