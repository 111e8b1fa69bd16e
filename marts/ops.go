package marts

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/table"
)

// Schemas of the ops tables this package owns.
var (
	// RunsSchema is ops.runs: one row per job run.
	RunsSchema = schemaOf(
		col{"run_id", str}, col{"job", str}, col{"started", tsUTC}, col{"duration_ms", i64},
		col{"status", str}, col{"error?", str}, col{"detail?", str})
	// AssetChecksSchema is ops.asset_checks: one row per check per run.
	AssetChecksSchema = schemaOf(
		col{"run_id", str}, col{"checked_at", tsUTC}, col{"check_name", str}, col{"asset", str},
		col{"passed", boolean}, col{"observed", i64}, col{"expected", i64},
		col{"numbers", str}, col{"message", str})
)

// recordChecks appends checks to ops.asset_checks, with, in the same
// commit, the record of what the passing offsets and uniqueness checks
// established (state.go).
func (m *Marts) recordChecks(ctx context.Context, runID string, checks []Check) error {
	props, err := checkedProps(m.bronzeSeen, m.idsSeen)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, AssetChecksSchema)
	defer b.Release()
	for _, c := range checks {
		nums, err := json.Marshal(c.Numbers)
		if err != nil {
			return fmt.Errorf("encode numbers of %s: %w", c.Name, err)
		}
		b.Field(0).(*array.StringBuilder).Append(runID)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(c.CheckedAt.UnixMicro()))
		b.Field(2).(*array.StringBuilder).Append(c.Name)
		b.Field(3).(*array.StringBuilder).Append(c.Asset)
		b.Field(4).(*array.BooleanBuilder).Append(c.Passed)
		b.Field(5).(*array.Int64Builder).Append(c.Observed)
		b.Field(6).(*array.Int64Builder).Append(c.Expected)
		b.Field(7).(*array.StringBuilder).Append(string(nums))
		b.Field(8).(*array.StringBuilder).Append(c.Message)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return m.appendOps(ctx, OpsAssetChecks, AssetChecksSchema, runID, rec, props)
}

// loadChecked reads, once per process, what the checks established before
// it (ops.asset_checks' record): the first checks of a process then count
// only what changed since. A record that cannot be read is logged and
// costs a recount.
func (m *Marts) loadChecked(ctx context.Context) {
	if m.checkedLoaded {
		return
	}
	props, err := m.lake.Properties(ctx, OpsAssetChecks)
	if isNoTable(err) {
		m.checkedLoaded = true
		return
	}
	if err == nil {
		var b *bronzeSeen
		var ids *seenFiles
		if b, ids, err = parseChecked(props); err == nil {
			m.bronzeSeen, m.idsSeen, m.checkedLoaded = b, ids, true
			return
		}
	}
	if ctx.Err() == nil {
		m.checkedLoaded = true // a record that cannot be read stays so; the checks recount
	}
	m.cfg.Logger.Warn("marts: read what the last checks established; this run counts every id and offset", "err", err)
}

// recordRun appends one run to ops.runs.
func (m *Marts) recordRun(ctx context.Context, r Run) error {
	b := array.NewRecordBuilder(memory.DefaultAllocator, RunsSchema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(r.ID)
	b.Field(1).(*array.StringBuilder).Append(r.Job)
	b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.Started.UnixMicro()))
	b.Field(3).(*array.Int64Builder).Append(r.Duration.Milliseconds())
	b.Field(4).(*array.StringBuilder).Append(r.Status)
	if r.Err == "" {
		b.Field(5).AppendNull()
	} else {
		b.Field(5).(*array.StringBuilder).Append(r.Err)
	}
	if r.Detail == "" {
		b.Field(6).AppendNull()
	} else {
		b.Field(6).(*array.StringBuilder).Append(r.Detail)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return m.appendOps(ctx, OpsRuns, RunsSchema, r.ID, rec, nil)
}

// appendOps appends rec to an ops table of this package as the next batch of
// marker query "marts", creating the table on first use. Marts is the only
// writer of these tables, and its jobs are serialised.
// props are table properties set in the same commit (nil: none).
func (m *Marts) appendOps(ctx context.Context, ident string, schema *arrow.Schema, runID string, rec arrow.RecordBatch, props map[string]string) error {
	// The next batch id is read from the marker: two appends at once would
	// pick the same id and the second would be skipped as a replay.
	m.opsMu.Lock()
	defer m.opsMu.Unlock()
	mk, ok, err := m.lake.LastCommitted(ctx, ident, opsQuery)
	if isNoTable(err) {
		if err := m.lake.Overwrite(ctx, ident, schema, nil, nil); err != nil {
			return fmt.Errorf("create %s: %w", ident, err)
		}
		mk, ok, err = m.lake.LastCommitted(ctx, ident, opsQuery)
	}
	if err != nil {
		return fmt.Errorf("record in %s: %w", ident, err)
	}
	next := int64(0)
	if ok {
		next = mk.Batch + 1
	}
	_, err = m.lake.CommitBatch(ctx, ident, table.Batch{
		Query: opsQuery, ID: next, Offsets: runID,
		Records:    []arrow.RecordBatch{rec},
		Props:      map[string]string{"run-id": runID, "committed-at": time.Now().UTC().Format(time.RFC3339Nano)},
		TableProps: props,
	})
	if err != nil {
		return fmt.Errorf("record in %s: %w", ident, err)
	}
	return nil
}
