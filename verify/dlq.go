package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/broker"
	"lakehouse/table"
)

// dlqQuery is the dead-letter query's name (stream.DLQQuery): its marker in
// bronze.recentchange_dlq holds the end offsets of its last batch.
const dlqQuery = "dlq"

// DLQCounts is bronze.recentchange_dlq against the dead-letter topic.
type DLQCounts struct {
	Rows     int64   `json:"rows"`     // rows of the table
	Distinct int64   `json:"distinct"` // distinct (partition, offset) among them
	Missing  int64   `json:"missing"`  // committed offsets the broker holds that the table lacks
	Dups     int64   `json:"duplicated"`
	Foreign  int64   `json:"foreign"` // rows of offsets the topic never had
	Pending  int64   `json:"pending"` // offsets the dead-letter query has not committed yet
	Gaps     []int64 `json:"gaps,omitempty"`
	Repeated []int64 `json:"repeated,omitempty"`
}

// scanDLQ counts the dead-letter table against the topic: every offset the
// topic holds below the query's marker must be in the table exactly once
// (the table keeps the offsets retention trimmed from the topic); offsets
// at or above the marker are pending, and all of them are while the table
// does not exist yet.
func scanDLQ(ctx context.Context, log broker.Log, lake *table.Lake, topic string) (DLQCounts, error) {
	var c DLQCounts
	offs, err := log.Offsets(ctx, topic)
	if errors.Is(err, broker.ErrUnknownTopic) {
		offs, err = nil, nil
	}
	if err != nil {
		return c, fmt.Errorf("read dead-letter offsets: %w", err)
	}
	held, err := readHeld(ctx, log, topic, offs)
	if err != nil {
		return c, err
	}
	committed := make([]int64, len(offs))
	m, ok, err := lake.LastCommitted(ctx, table.BronzeDLQ, dlqQuery)
	absent := errors.Is(err, table.ErrNoSuchTable) // a lake no appliance of this version has run on yet
	if err != nil && !absent {
		return c, fmt.Errorf("read %s marker: %w", table.BronzeDLQ, err)
	}
	if ok {
		e, err := parseEnds(m.Offsets)
		if err != nil {
			return c, fmt.Errorf("%s marker: %w", table.BronzeDLQ, err)
		}
		for p := range committed {
			committed[p] = e[p]
		}
	}
	bits := make([]*offsetBits, len(offs))
	for p, o := range offs {
		bits[p] = newOffsetBits(o.End)
	}
	var beyond [][2]int64 // (partition, offset) at or beyond offs' end
	scan := lake.ScanColumns
	if absent {
		scan = func(context.Context, string, []string, func(arrow.RecordBatch) error) error { return nil }
	}
	err = scan(ctx, table.BronzeDLQ, []string{"broker_partition", "broker_offset"}, func(rec arrow.RecordBatch) error {
		part, err := column[*array.Int32](rec, "broker_partition")
		if err != nil {
			return err
		}
		off, err := column[*array.Int64](rec, "broker_offset")
		if err != nil {
			return err
		}
		for i := range int(rec.NumRows()) {
			c.Rows++
			p := int(part.Value(i))
			if p < 0 || p >= len(bits) {
				c.Foreign++
				continue
			}
			if in, again := bits[p].add(off.Value(i)); !in {
				if o := off.Value(i); o >= offs[p].End {
					beyond = append(beyond, [2]int64{int64(p), o})
					continue
				}
				c.Foreign++
			} else if again {
				c.Dups++
			}
		}
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("scan %s: %w", table.BronzeDLQ, err)
	}
	// Rows beyond the ends read before the scan: committed while verify
	// read (beside a running appliance) unless the topic's ends now are
	// still below them. The later ones are after this verify's cut.
	if len(beyond) > 0 {
		now, err := log.Offsets(ctx, topic)
		if err != nil {
			return c, fmt.Errorf("read dead-letter offsets again: %w", err)
		}
		for _, b := range beyond {
			if p := int(b[0]); p < len(now) && b[1] < now[p].End {
				c.Rows--
				continue
			}
			c.Foreign++
		}
	}
	for p, o := range offs {
		c.Distinct += bits[p].distinct()
		n, gaps := held.absent(p, bits[p], o.Start, min(committed[p], o.End), maxListed)
		c.Missing += n
		c.Gaps = append(c.Gaps, gaps...)
		c.Repeated = append(c.Repeated, bits[p].repeated(maxListed)...)
		c.Pending += held.count(p, max(committed[p], o.Start), o.End)
	}
	return c, nil
}
