package lakeio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/stream"
	"lakehouse/table"
)

// DefaultPollInterval is how often Source.Wait looks for new snapshots.
const DefaultPollInterval = 500 * time.Millisecond

// SnapshotOffset is a Source position: the id of the last consumed append
// snapshot, 0 before the first.
type SnapshotOffset struct {
	Snapshot int64 `json:"snapshot"`
}

// Offset encodes the position deterministically.
func (s SnapshotOffset) Offset() stream.Offset {
	return stream.Offset(`{"snapshot":` + strconv.FormatInt(s.Snapshot, 10) + `}`)
}

// ParseSnapshotOffset decodes an Offset written by SnapshotOffset.Offset.
func ParseSnapshotOffset(o stream.Offset) (SnapshotOffset, error) {
	var s SnapshotOffset
	if o == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(o), &s); err != nil {
		return s, fmt.Errorf("parse snapshot offset %q: %w", o, err)
	}
	return s, nil
}

// Source reads the rows appended to one table, snapshot by snapshot, in
// commit order. Units (for MaxOffsetsPerTrigger and Lag) are rows; an empty
// snapshot counts as one unit so that it is consumed. Bytes (for
// MaxBytesPerTrigger) are the rows' in-memory size the snapshot records. Compaction and other
// non-append snapshots are skipped (they add no new rows).
type Source struct {
	Lake  *table.Lake
	Table string
	// PollInterval is how often Wait checks for new snapshots
	// (DefaultPollInterval).
	PollInterval time.Duration
}

// NewSource returns a Source of ident with defaults filled; it follows
// ident's appends (table.Lake.FollowAppends), so that the appends this
// process commits to ident are kept for Read.
func NewSource(lake *table.Lake, ident string) *Source {
	lake.FollowAppends(ident)
	return &Source{Lake: lake, Table: ident, PollInterval: DefaultPollInterval}
}

// Earliest is the position before the table's oldest retained append.
func (s *Source) Earliest(ctx context.Context) (stream.Offset, error) {
	return SnapshotOffset{}.Offset(), nil
}

func (s *Source) after(ctx context.Context, start stream.Offset) ([]table.Snapshot, error) {
	from, err := ParseSnapshotOffset(start)
	if err != nil {
		return nil, err
	}
	snaps, err := s.Lake.AppendsAfter(ctx, s.Table, from.Snapshot)
	if errors.Is(err, table.ErrSnapshotNotFound) {
		return nil, fmt.Errorf("list snapshots of %s after %d: %w: %w", s.Table, from.Snapshot, stream.ErrSourceBehind, err)
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots of %s: %w", s.Table, err)
	}
	return snaps, nil
}

// units is the size of a snapshot in Source units: its added rows, or 1
// for an empty snapshot.
func units(s table.Snapshot) int64 {
	n, err := strconv.ParseInt(s.Summary["added-records"], 10, 64)
	if err != nil || n <= 0 {
		return 1
	}
	return n
}

// Plan takes whole snapshots after start while their rows fit in
// limit.Units and their bytes (table.Snapshot.AddedBytes: the rows'
// in-memory size) in limit.Bytes, and always at least one.
func (s *Source) Plan(ctx context.Context, start stream.Offset, limit stream.Limit) (stream.Offset, int64, error) {
	snaps, err := s.after(ctx, start)
	if err != nil {
		return "", 0, err
	}
	var n, bytes int64
	end := start
	for i, sn := range snaps {
		u, b := units(sn), sn.AddedBytes()
		if i > 0 && (n+u > limit.Units || (limit.Bytes > 0 && bytes+b > limit.Bytes)) {
			break
		}
		n += u
		bytes += b
		end = SnapshotOffset{Snapshot: sn.ID}.Offset()
	}
	return end, n, nil
}

// Wait polls until a snapshot after start exists or ctx is done.
func (s *Source) Wait(ctx context.Context, start stream.Offset) error {
	every := s.PollInterval
	if every <= 0 {
		every = DefaultPollInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		// Take the commit signal before looking, so a commit between the
		// look and the select is not missed. The ticker covers commits made
		// by other processes, which are not signalled.
		committed := s.Lake.Committed(s.Table)
		snaps, err := s.after(ctx, start)
		if err != nil {
			return err
		}
		if len(snaps) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-committed:
		case <-t.C:
		}
	}
}

// Lag is the units (rows; 1 per empty snapshot) appended after end.
func (s *Source) Lag(ctx context.Context, end stream.Offset) (int64, error) {
	snaps, err := s.after(ctx, end)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, sn := range snaps {
		n += units(sn)
	}
	return n, nil
}

// Read returns the rows of the snapshots in (start, end], in commit order,
// and their data-file size. The Source is the table's one consumer in the
// process: it takes the rows of an append this process's Lake just
// committed from memory (table.Lake.TakeAppended) and reads the rest from
// the files.
func (s *Source) Read(ctx context.Context, start, end stream.Offset) ([]arrow.RecordBatch, int64, error) {
	to, err := ParseSnapshotOffset(end)
	if err != nil {
		return nil, 0, err
	}
	snaps, err := s.after(ctx, start)
	if err != nil {
		return nil, 0, err
	}
	var out []arrow.RecordBatch
	var size int64
	fail := func(err error) ([]arrow.RecordBatch, int64, error) {
		for _, r := range out {
			r.Release()
		}
		return nil, 0, err
	}
	found := start == end
	for _, sn := range snaps {
		if found {
			break
		}
		recs, err := s.Lake.TakeAppended(ctx, s.Table, sn.ID)
		if errors.Is(err, table.ErrSnapshotNotFound) {
			return fail(fmt.Errorf("read snapshot %d of %s: %w: %w", sn.ID, s.Table, stream.ErrSourceBehind, err))
		}
		if err != nil {
			return fail(fmt.Errorf("read snapshot %d of %s: %w", sn.ID, s.Table, err))
		}
		out = append(out, recs...)
		if n, err := strconv.ParseInt(sn.Summary["added-files-size"], 10, 64); err == nil {
			size += n
		}
		found = sn.ID == to.Snapshot
	}
	if !found {
		return fail(fmt.Errorf("read %s up to snapshot %d: not an append after %s: %w", s.Table, to.Snapshot, start, stream.ErrSourceBehind))
	}
	return out, size, nil
}
