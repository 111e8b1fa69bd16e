package stream

import (
	"context"
	"fmt"

	"lakehouse/table"
)

// BrokerFloor returns, for each of the source topic's partitions, the first
// offset bronze has not committed: broker retention may trim below it,
// never at or above it (the same rule as a Kafka consumer's committed
// offset). It reads bronze's table marker, which survives a lost
// checkpoint, not the checkpoint. ok is false when bronze has committed
// nothing: then nothing may be trimmed. A partition bronze never read has
// floor 0.
func BrokerFloor(ctx context.Context, lake *table.Lake, partitions int) (floor []int64, ok bool, err error) {
	return TableFloor(ctx, lake, table.Bronze, BronzeQuery, partitions)
}

// TableFloor is BrokerFloor for any query that lands a topic in a table
// (bronze, the dead-letter query): the first offset of each partition the
// query has not committed to ident, from its marker there.
func TableFloor(ctx context.Context, lake *table.Lake, ident, query string, partitions int) (floor []int64, ok bool, err error) {
	m, ok, err := lake.LastCommitted(ctx, ident, query)
	if err != nil || !ok {
		return nil, false, err
	}
	ends, err := ParsePartitionOffsets(Offset(m.Offsets))
	if err != nil {
		return nil, false, fmt.Errorf("%s marker in %s: %w", query, ident, err)
	}
	floor = make([]int64, partitions)
	for i := range floor {
		floor[i] = ends[i]
	}
	return floor, true, nil
}
