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
	m, ok, err := lake.LastCommitted(ctx, table.Bronze, BronzeQuery)
	if err != nil || !ok {
		return nil, false, err
	}
	ends, err := ParsePartitionOffsets(Offset(m.Offsets))
	if err != nil {
		return nil, false, fmt.Errorf("bronze marker: %w", err)
	}
	floor = make([]int64, partitions)
	for i := range floor {
		floor[i] = ends[i]
	}
	return floor, true, nil
}
