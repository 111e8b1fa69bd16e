package brokertest

import (
	"context"

	"lakehouse/broker"
)

// Sparse wraps a dense Log so that its offsets skip as Kafka's do: the
// record at dense offset k is at offset 2k+1, and every even offset holds
// no record (as a transaction marker's offset holds none). Start and End
// double. It lets code that must not assume dense offsets (the stream
// source, verify, the asset checks) be tested without a Kafka cluster; the
// real adapter's own tests run against kfake.
func Sparse(l broker.Log) broker.Log { return sparseLog{l} }

type sparseLog struct{ broker.Log }

func (sparseLog) SparseOffsets() bool { return true }

func (s sparseLog) Topics(ctx context.Context) ([]broker.TopicInfo, error) {
	ts, err := s.Log.Topics(ctx)
	for i := range ts {
		ts[i].Partitions = spread(ts[i].Partitions)
	}
	return ts, err
}

func (s sparseLog) Offsets(ctx context.Context, topic string) ([]broker.PartitionOffsets, error) {
	offs, err := s.Log.Offsets(ctx, topic)
	return spread(offs), err
}

func spread(offs []broker.PartitionOffsets) []broker.PartitionOffsets {
	out := make([]broker.PartitionOffsets, len(offs))
	for i, o := range offs {
		out[i] = o
		out[i].Start, out[i].End = 2*o.Start, 2*o.End
	}
	return out
}

func (s sparseLog) Append(ctx context.Context, b broker.Batch) ([]broker.Position, error) {
	pos, err := s.Log.Append(ctx, b)
	for i := range pos {
		pos[i].Offset = 2*pos[i].Offset + 1
	}
	return pos, err
}

func (s sparseLog) Read(ctx context.Context, topic string, partition int, from int64, max int) ([]broker.Message, error) {
	if from < 0 {
		from = -2 // below any Start: the dense log says trimmed
	}
	msgs, err := s.Log.Read(ctx, topic, partition, from/2, max)
	if err == nil && from%2 == 1 && len(msgs) == 0 {
		// from == End-1 of the doubled range can only be asked for after
		// a record at End-1, which does not exist: it is beyond the end.
		offs, oerr := s.Offsets(ctx, topic)
		if oerr == nil && partition < len(offs) && from > offs[partition].End {
			return nil, broker.ErrOffsetOutOfRange
		}
	}
	for i := range msgs {
		msgs[i].Offset = 2*msgs[i].Offset + 1
	}
	return msgs, err
}

func (s sparseLog) Wait(ctx context.Context, topic string, partition int, offset int64) error {
	return s.Log.Wait(ctx, topic, partition, offset/2)
}
