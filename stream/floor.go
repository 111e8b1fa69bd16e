package stream

import (
	"context"
	"fmt"

	"lakehouse/table"
)

// TableFloor returns, for each partition of the topic a query lands in a
// table (bronze, the dead-letter query), the first offset the query has
// not committed to ident: broker retention may trim below it, never at or
// above it (the same rule as a Kafka consumer's committed offset). It reads
// the query's table marker, which survives a lost checkpoint, not the
// checkpoint. ok is false when the query has committed nothing: then
// nothing may be trimmed. A partition the query never read has floor 0.
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
