package table

import (
	"context"
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
// returns a zero result when nothing is due.
func (l *Lake) Compact(ctx context.Context, ident string, pol CompactPolicy) (CompactResult, error) {
	if err := pol.validate(); err != nil {
		return CompactResult{}, fmt.Errorf("compact %s: %w", ident, err)
	}
	if pol.Now.IsZero() {
		pol.Now = time.Now()
	}
	return retryCommit(ctx, l, "compact "+ident, func() (CompactResult, error) {
		tbl, err := l.load(ctx, ident)
		if err != nil {
			return CompactResult{}, err
		}
		if tbl.CurrentSnapshot() == nil {
			return CompactResult{}, nil
		}
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return CompactResult{}, fmt.Errorf("plan files: %w", err)
		}
		groups, err := planCompaction(tasks, pol, dayField(tbl))
		if err != nil || len(groups) == 0 {
			return CompactResult{}, err
		}
		return rewrite(ctx, tbl, groups, pol.TargetBytes)
	})
}

// planCompaction picks the groups pol says are due among tasks. dayField is
// the partition field id of a day() transform (-1: none).
func planCompaction(tasks []icetable.FileScanTask, pol CompactPolicy, dayField int) ([]icetable.CompactionTaskGroup, error) {
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
	var out []icetable.CompactionTaskGroup
	add := func(subset []icetable.FileScanTask, minFiles int) error {
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
			out = append(out, icetable.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
		}
		return nil
	}
	if err := add(cold, 2); err != nil {
		return nil, err
	}
	for tr := 0; tr < 64; tr++ {
		if len(tiers[tr]) >= pol.FanIn {
			if err := add(tiers[tr], pol.FanIn); err != nil {
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

// rewrite commits groups as one replace snapshot of tbl, refusing one that
// would change the table's row count.
func rewrite(ctx context.Context, tbl *icetable.Table, groups []icetable.CompactionTaskGroup, target int64) (CompactResult, error) {
	txn := tbl.NewTransaction()
	res, err := txn.RewriteDataFiles(ctx, groups, icetable.RewriteDataFilesOptions{
		SnapshotProps: iceberg.Properties{PropPrefix + "maintenance": "compact"},
		GroupOptions:  []icetable.CompactionGroupOption{icetable.WithCompactionTargetFileSize(target)},
	})
	if err != nil {
		return CompactResult{}, err
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
	out := CompactResult{
		Groups: res.RewrittenGroups, FilesRemoved: res.RemovedDataFiles, FilesAdded: res.AddedDataFiles,
		BytesBefore: res.BytesBefore, BytesAfter: res.BytesAfter,
	}
	if s := committed.CurrentSnapshot(); s != nil {
		out.SnapshotID = s.SnapshotID
	}
	for _, g := range groups {
		for _, t := range g.Tasks {
			out.RowsMoved += t.File.Count()
		}
	}
	return out, nil
}

func totalRecords(s *icetable.Snapshot) string {
	if s == nil || s.Summary == nil {
		return "<none>"
	}
	return s.Summary.Properties["total-records"]
}
