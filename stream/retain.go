package stream

import (
	"context"
	"fmt"
	"time"

	"lakehouse/broker"
	"lakehouse/table"
)

// RetainBronze trims the records of topic (the one bronze lands) older than
// maxAge, or the oldest while the topic stores more than maxBytes
// (compressed, shared evenly between its partitions; 0: no size limit),
// never an offset bronze has not committed (TableFloor). It returns the
// number of records removed.
func RetainBronze(ctx context.Context, db *broker.DB, lake *table.Lake, topic string, maxAge time.Duration, maxBytes int64, now time.Time) (int64, error) {
	return retainLanded(ctx, db, lake, topic, table.Bronze, BronzeQuery, maxAge, maxBytes, now)
}

// RetainDLQ trims dead letters of topic older than maxAge, never an offset
// the dead-letter query has not committed to bronze.recentchange_dlq: the
// table keeps every dead letter after the topic forgets it.
func RetainDLQ(ctx context.Context, db *broker.DB, lake *table.Lake, topic string, maxAge time.Duration, now time.Time) (int64, error) {
	return retainLanded(ctx, db, lake, topic, table.BronzeDLQ, DLQQuery, maxAge, 0, now)
}

// retainLanded trims records of topic older than maxAge, or the oldest
// while the topic stores more than maxBytes, below the offsets query has
// committed to ident (TableFloor, the same rule as a Kafka consumer's
// committed offset), and nothing before its first commit.
func retainLanded(ctx context.Context, db *broker.DB, lake *table.Lake, topic, ident, query string, maxAge time.Duration, maxBytes int64, now time.Time) (int64, error) {
	offs, err := db.Offsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("retention of %s: %w", topic, err)
	}
	floor, ok, err := TableFloor(ctx, lake, ident, query, len(offs))
	if err != nil || !ok {
		return 0, err
	}
	r := broker.Retention{MaxAge: maxAge, Floor: floor, Now: now}
	if maxBytes > 0 {
		r.MaxStored = max(1, maxBytes/int64(len(offs)))
	}
	n, err := db.Retain(ctx, topic, r)
	if err != nil {
		return n, fmt.Errorf("retention of %s: %w", topic, err)
	}
	return n, nil
}
