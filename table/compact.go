package table

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
)

// Defaults of CompactPolicy.
const (
	// DefaultCompactTargetBytes is the size of the files compaction writes.
	DefaultCompactTargetBytes = 128 << 20
	// DefaultCompactFanIn is how many files of one tier a partition gathers
	// before they are merged into one file of the next tier.
	DefaultCompactFanIn = 8
	// DefaultCompactColdAfter: a day partition that ended this long ago
	// takes no more streaming writes, and its small files are merged.
	DefaultCompactColdAfter = time.Hour
)

// CompactPolicy says which data files Compact merges. It is tiered by row
// count, so the work per row stays bounded however long a table streams:
// tier k holds files of FanIn^k up to FanIn^(k+1) rows; once a partition
// holds FanIn files of one tier they are merged (into files of about
// TargetBytes at most), which moves their rows up at least one tier (rows
// add up exactly; bytes do not, a merged file compresses better). Every row
// is rewritten about log_FanIn(rows per TargetBytes file) times, not once
// per compaction, and a partition keeps fewer than FanIn files per tier
// between compactions. Files of at least 3/4 of TargetBytes are never
// rewritten. A day partition (a day() transform) that ended more than
// ColdAfter ago has all its smaller files merged at once: closed days end as
// few large files.
type CompactPolicy struct {
	TargetBytes int64
	FanIn       int
	ColdAfter   time.Duration // 0: never treat a partition as cold
	Now         time.Time     // the clock for ColdAfter (zero: time.Now())
}

// DefaultCompactPolicy returns the policy the appliance compacts with.
func DefaultCompactPolicy() CompactPolicy {
	return CompactPolicy{TargetBytes: DefaultCompactTargetBytes, FanIn: DefaultCompactFanIn, ColdAfter: DefaultCompactColdAfter}
}

func (p CompactPolicy) validate() error {
	if p.TargetBytes <= 0 || p.FanIn < 2 || p.ColdAfter < 0 {
		return fmt.Errorf("compact policy %+v: want TargetBytes > 0, FanIn >= 2, ColdAfter >= 0", p)
	}
	return nil
}

// tier returns the tier of a data file, or -1 when the file is large
// enough to be left alone.
func (p CompactPolicy) tier(f iceberg.DataFile) int {
	if f.FileSizeBytes() >= p.TargetBytes*3/4 {
		return -1
	}
	k := 0
	for n := f.Count(); n >= int64(p.FanIn); n /= int64(p.FanIn) {
		k++
	}
	return k
}

// CompactResult reports a Compact call.
type CompactResult struct {
	Groups       int   // compaction groups rewritten
	FilesRemoved int   // small data files replaced
	FilesAdded   int   // data files written
	BytesBefore  int64 // size of the replaced files
	BytesAfter   int64 // size of the new files
	RowsMoved    int64 // rows rewritten
	SnapshotID   int64 // the replace snapshot (0 if nothing to do)
}

// Compact merges the data files of ident that pol says are due, per
// partition, as one "replace" snapshot (which AppendsAfter skips). It
// returns a zero result when nothing is due. The merged files are written
// once; a commit that loses the race with a stream's append is staged again
// on the new head with the same files (appends never touch the files being
// replaced), so a busy table cannot starve its compaction by making it
// redo the rewrite at every attempt.
func (l *Lake) Compact(ctx context.Context, ident string, pol CompactPolicy) (CompactResult, error) {
	if err := pol.validate(); err != nil {
		return CompactResult{}, fmt.Errorf("compact %s: %w", ident, err)
	}
	if pol.Now.IsZero() {
		pol.Now = time.Now()
	}
	tbl, err := l.load(ctx, ident)
	if err != nil {
		return CompactResult{}, fmt.Errorf("compact %s: %w", ident, err)
	}
	if tbl.CurrentSnapshot() == nil {
		return CompactResult{}, nil
	}
	tasks, err := planFiles(ctx, ident, tbl.Scan().PlanFiles)
	if err != nil {
		return CompactResult{}, fmt.Errorf("compact %s: %w", ident, err)
	}
	groups, err := planCompaction(tasks, pol, dayField(tbl))
	if err != nil || len(groups) == 0 {
		return CompactResult{}, err
	}
	results, err := writeGroups(ctx, tbl, groups, pol.TargetBytes)
	if err != nil {
		return CompactResult{}, fmt.Errorf("compact %s: %w", ident, err)
	}
	out, err := retryCommit(ctx, l, ident, "compact "+ident, func() (CompactResult, error) {
		tbl, err := l.load(ctx, ident)
		if err != nil {
			return CompactResult{}, err
		}
		return commitRewrite(ctx, tbl, results)
	})
	if err != nil && (errors.Is(err, ErrCommitFailed) || errors.Is(err, ErrLostWrite) || ctx.Err() != nil) {
		// Definitely not committed: the merged files are no one's.
		for _, gr := range results {
			removeDataFiles(ctx, tbl, gr.NewDataFiles)
		}
	}
	return out, err
}

// writeGroups writes the merged files of each group and checks that each
// holds exactly the rows of the files it replaces.
func writeGroups(ctx context.Context, tbl *icetable.Table, groups []plannedGroup, target int64) ([]icetable.CompactionGroupResult, error) {
	var out []icetable.CompactionGroupResult
	fail := func(err error) ([]icetable.CompactionGroupResult, error) {
		for _, gr := range out {
			removeDataFiles(ctx, tbl, gr.NewDataFiles)
		}
		return nil, err
	}
	var mts [2]*icetable.Table // by final, made when a group needs it
	for _, pg := range groups {
		g, i := pg.CompactionTaskGroup, 0
		if pg.final {
			i = 1
		}
		if mts[i] == nil {
			mt, err := mergeTable(tbl, pg.final)
			if err != nil {
				return fail(err)
			}
			mts[i] = mt
		}
		gr, err := mergeGroup(ctx, mts[i], g, target)
		if err != nil {
			removeDataFiles(ctx, tbl, gr.NewDataFiles)
			return fail(fmt.Errorf("rewrite group %s: %w", g.PartitionKey, err))
		}
		out = append(out, gr)
		if in, got := rowsOf(gr.OldDataFiles), rowsOf(gr.NewDataFiles); in != got {
			return fail(lostWrite(ctx, tbl, fmt.Sprintf("rewrite of %s wrote %d of %d rows", g.PartitionKey, got, in)))
		}
	}
	return out, nil
}

func rowsOf(files []iceberg.DataFile) int64 {
	var n int64
	for _, f := range files {
		n += f.Count()
	}
	return n
}

// plannedGroup is a group of files to merge; final when they are a closed
// day's, whose merged files are never rewritten (see finalLevel).
type plannedGroup struct {
	icetable.CompactionTaskGroup
	final bool
}

// planCompaction picks the groups pol says are due among tasks. dayField is
// the partition field id of a day() transform (-1: none).
func planCompaction(tasks []icetable.FileScanTask, pol CompactPolicy, dayField int) ([]plannedGroup, error) {
	tiers := map[int][]icetable.FileScanTask{}
	var cold []icetable.FileScanTask
	for _, t := range tasks {
		tr := pol.tier(t.File)
		switch {
		case tr < 0:
		case pol.ColdAfter > 0 && partitionEnded(t.File, dayField, pol.Now.Add(-pol.ColdAfter)):
			cold = append(cold, t)
		default:
			tiers[tr] = append(tiers[tr], t)
		}
	}
	var out []plannedGroup
	add := func(subset []icetable.FileScanTask, minFiles int, final bool) error {
		cfg := compaction.DefaultConfig()
		cfg.TargetFileSizeBytes = pol.TargetBytes
		cfg.MinFileSizeBytes = pol.TargetBytes * 3 / 4 // every file of subset is a candidate
		cfg.MaxFileSizeBytes = pol.TargetBytes * 9 / 5
		cfg.MinInputFiles = uint(minFiles)
		plan, err := cfg.PlanCompaction(subset)
		if err != nil {
			return err
		}
		for _, g := range plan.Groups {
			out = append(out, plannedGroup{icetable.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}, final})
		}
		return nil
	}
	if err := add(cold, 2, true); err != nil {
		return nil, err
	}
	for tr := 0; tr < 64; tr++ {
		if len(tiers[tr]) >= pol.FanIn {
			if err := add(tiers[tr], pol.FanIn, false); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// dayField returns the partition field id of tbl's day() partition, or -1.
func dayField(tbl *icetable.Table) int {
	spec := tbl.Spec()
	if spec.NumFields() != 1 {
		return -1
	}
	if f := spec.Field(0); f.Transform.Equals(iceberg.DayTransform{}) {
		return f.FieldID
	}
	return -1
}

// partitionEnded reports whether f's day partition ended before cutoff.
func partitionEnded(f iceberg.DataFile, dayField int, cutoff time.Time) bool {
	if dayField < 0 {
		return false
	}
	var day int64
	switch v := f.Partition()[dayField].(type) {
	case iceberg.Date:
		day = int64(v)
	case int32:
		day = int64(v)
	case int64:
		day = v
	case int:
		day = int64(v)
	default:
		return false
	}
	return time.Unix((day+1)*86400, 0).Before(cutoff)
}

// commitRewrite stages the written groups as one replace snapshot on tbl
// and commits it, refusing one that would change the table's row count.
func commitRewrite(ctx context.Context, tbl *icetable.Table, results []icetable.CompactionGroupResult) (CompactResult, error) {
	txn := tbl.NewTransaction()
	rw := txn.NewRewrite(iceberg.Properties{PropPrefix + "maintenance": "compact"})
	var out CompactResult
	for _, gr := range results {
		rw.ApplyResult(gr)
		out.Groups++
		out.FilesRemoved += len(gr.OldDataFiles)
		out.FilesAdded += len(gr.NewDataFiles)
		out.RowsMoved += rowsOf(gr.OldDataFiles)
		for _, f := range gr.OldDataFiles {
			out.BytesBefore += f.FileSizeBytes()
		}
		for _, f := range gr.NewDataFiles {
			out.BytesAfter += f.FileSizeBytes()
		}
	}
	if err := rw.Commit(ctx); err != nil {
		return CompactResult{}, fmt.Errorf("stage rewrite: %w", err)
	}
	staged, err := txn.StagedTable()
	if err != nil {
		return CompactResult{}, err
	}
	if got, want := totalRecords(staged.CurrentSnapshot()), totalRecords(tbl.CurrentSnapshot()); got != want {
		return CompactResult{}, fmt.Errorf("%w: rewrite would leave %s rows, table has %s", ErrLostWrite, got, want)
	}
	committed, err := txn.Commit(ctx)
	if err != nil {
		return CompactResult{}, err
	}
	if s := committed.CurrentSnapshot(); s != nil {
		out.SnapshotID = s.SnapshotID
	}
	return out, nil
}

func totalRecords(s *icetable.Snapshot) string {
	if s == nil || s.Summary == nil {
		return "<none>"
	}
	return s.Summary.Properties["total-records"]
}
