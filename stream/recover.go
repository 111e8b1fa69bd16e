package stream

import (
	"context"
	"fmt"
)

// resume recovers the query and re-runs the batch the last run planned but
// did not commit. It returns the entry the next batch follows.
func (q *Query) resume(ctx context.Context) (OffsetEntry, error) {
	next, pending, err := q.recover(ctx)
	if err != nil || pending == nil {
		return next, err
	}
	if err := q.runBatch(ctx, *pending, true); err != nil {
		return next, err
	}
	return *pending, nil
}

// recover establishes the query id and position. It returns the last
// planned entry (its End is where the next batch starts; ID is the previous
// batch id, -1 for none) and, if the last planned batch has no commit entry,
// that batch to re-run.
func (q *Query) recover(ctx context.Context) (OffsetEntry, *OffsetEntry, error) {
	name := q.cfg.Name
	marker, hasMarker, err := q.sink.LastCommitted(ctx, name)
	if err != nil {
		return OffsetEntry{}, nil, fmt.Errorf("recover %s: read table marker: %w", name, err)
	}
	id, hasID, err := q.cp.QueryID()
	if err != nil {
		return OffsetEntry{}, nil, fmt.Errorf("recover %s: %w", name, err)
	}
	lastOff, hasOff, err := q.cp.LatestOffsets()
	if err != nil {
		return OffsetEntry{}, nil, fmt.Errorf("recover %s: %w", name, err)
	}
	if hasID && hasOff && hasMarker && marker.Batch > lastOff.Batch {
		return OffsetEntry{}, nil, fmt.Errorf("recover %s: table batch %d, checkpoint planned only up to %d: %w",
			name, marker.Batch, lastOff.Batch, ErrTableAhead)
	}
	if hasID && hasOff {
		q.setID(id, 0, "")
		return q.recoverFromCheckpoint(ctx, id, lastOff)
	}
	start, err := q.recoverWithoutCheckpoint(ctx, id, hasID, marker, hasMarker)
	return start, nil, err
}

// recoverFromCheckpoint continues after the checkpoint's last offset entry:
// the next batch follows it when it has its commit entry, else it is re-run
// with the same id and range.
func (q *Query) recoverFromCheckpoint(ctx context.Context, id string, lastOff OffsetEntry) (OffsetEntry, *OffsetEntry, error) {
	name := q.cfg.Name
	lastCommit, hasCommit, err := q.cp.LatestCommit()
	if err != nil {
		return OffsetEntry{}, nil, fmt.Errorf("recover %s: %w", name, err)
	}
	switch {
	case hasCommit && lastCommit.Batch > lastOff.Batch:
		return OffsetEntry{}, nil, fmt.Errorf("recover %s: commit %d without offsets: %w", name, lastCommit.Batch, ErrCorruptCheckpoint)
	case hasCommit && lastCommit.Batch < lastOff.Batch-1:
		return OffsetEntry{}, nil, fmt.Errorf("recover %s: batch %d planned but %d never committed: %w",
			name, lastOff.Batch, lastCommit.Batch+1, ErrCorruptCheckpoint)
	}
	if err := q.reflushFromLog(ctx); err != nil {
		q.cfg.Logger.Warn("stream progress re-flush failed", "query", name, "err", err)
	}
	if hasCommit && lastCommit.Batch == lastOff.Batch {
		return lastOff, nil, nil
	}
	q.cfg.Logger.Info("stream re-running planned batch", "query", name, "query_id", id,
		"batch", lastOff.Batch, "start", string(lastOff.Start), "end", string(lastOff.End))
	prev := OffsetEntry{Batch: lastOff.Batch - 1, End: lastOff.Start}
	return prev, &lastOff, nil
}

// recoverWithoutCheckpoint starts a new query, or one whose checkpoint was
// lost: with a table marker, a new query id (the change is logged and
// counted) and, by OnCheckpointLoss, the marker's end offsets or the
// earliest ones; without, the earliest offsets. Batch ids continue above
// the table's so its marker check keeps working.
func (q *Query) recoverWithoutCheckpoint(ctx context.Context, id string, hasID bool, marker Marker, hasMarker bool) (OffsetEntry, error) {
	name := q.cfg.Name
	newID := id
	if !hasID {
		newID = newQueryID()
	}
	earliest, err := q.src.Earliest(ctx)
	if err != nil {
		return OffsetEntry{}, fmt.Errorf("recover %s: earliest offsets: %w", name, err)
	}
	start := OffsetEntry{Batch: -1, End: earliest}
	if hasMarker {
		if hasID && marker.QueryID == id {
			// Offsets were lost but the metadata survived: still a loss.
			newID = newQueryID()
		}
		q.cfg.Logger.Error("STREAM QUERY ID CHANGED: checkpoint lost, table holds batches of this query",
			"query", name, "previous_query_id", marker.QueryID, "new_query_id", newID,
			"table_batch", marker.Batch, "table_end", string(marker.End),
			"on_checkpoint_loss", q.cfg.OnCheckpointLoss.String(), "checkpoint", q.cp.Dir)
		q.setID(newID, 1, marker.QueryID)
		start.Batch = marker.Batch
		if q.cfg.OnCheckpointLoss == RebuildFromTable {
			start.End = marker.End
		} else {
			q.cfg.Logger.Error("STREAM START FRESH: re-reading from the earliest offsets, the sink WILL receive duplicates",
				"query", name, "start", string(earliest))
			q.unfenced = true // its first batch does not continue the table's last
		}
	} else {
		q.setID(newID, 0, "")
	}
	if err := q.cp.SetQueryID(newID, name); err != nil {
		return OffsetEntry{}, fmt.Errorf("recover %s: %w", name, err)
	}
	q.cfg.Logger.Info("stream query started", "query", name, "query_id", newID,
		"next_batch", start.Batch+1, "start", string(start.End))
	return start, nil
}

func (q *Query) setID(id string, changes int64, prev string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queryID, q.idChanges, q.previousID = id, changes, prev
}
