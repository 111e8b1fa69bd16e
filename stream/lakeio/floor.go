package lakeio

import (
	"context"
	"errors"
	"fmt"

	"lakehouse/stream"
	"lakehouse/table"
)

// ErrNotConsumed is returned by ResumeSnapshot when the reading query has
// not consumed anything yet.
var ErrNotConsumed = errors.New("nothing consumed yet")

// ResumeSnapshot returns the snapshot of the table query reads that its
// next batch starts after: the end of its last committed batch, from the
// marker on sink (the table query commits to), which survives a lost
// checkpoint. Snapshot expiry on the read table must keep it and every
// newer snapshot, or the query finds its starting point gone (the same
// rule as broker retention against bronze, see stream.TableFloor). It
// returns an error wrapping ErrNotConsumed when query has committed no
// batch, or none that read anything.
func ResumeSnapshot(ctx context.Context, lake *table.Lake, sink, query string) (int64, error) {
	m, ok, err := lake.LastCommitted(ctx, sink, query)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%s: %w", query, ErrNotConsumed)
	}
	off, err := ParseSnapshotOffset(stream.Offset(m.Offsets))
	if err != nil {
		return 0, err
	}
	if off.Snapshot == 0 {
		return 0, fmt.Errorf("%s: %w", query, ErrNotConsumed)
	}
	return off.Snapshot, nil
}

// Reader names a query that reads a table's appends: Source is the table
// it reads, Sink the table it commits to (its marker there says how far it
// read), Query its name. Each reading query declares its own (silver.Reads,
// sessions.Reads).
type Reader struct {
	Source, Sink, Query string
}

// Protect returns the snapshot of ident that the reader of it will start
// its next batch from (ResumeSnapshot): snapshot expiry on ident must keep
// it and every newer one. It is 0, nothing to keep, when no reader reads
// ident, and an error wrapping ErrNotConsumed when its reader has read
// nothing yet (expiry must then keep everything).
func Protect(ctx context.Context, lake *table.Lake, readers []Reader, ident string) (int64, error) {
	for _, r := range readers {
		if r.Source == ident {
			snap, err := ResumeSnapshot(ctx, lake, r.Sink, r.Query)
			if err != nil {
				return 0, fmt.Errorf("protect %s: %w", ident, err)
			}
			return snap, nil
		}
	}
	return 0, nil
}
