package table

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	icetable "github.com/apache/iceberg-go/table"
)

// A scan plan from iceberg-go is a list of tasks, and a task is a byte
// range of a data file, not a file: Scan().PlanFiles splits every Parquet
// file larger than read.split.target-size (128 MiB by default) into one
// task per run of row groups. A compaction whose output rolls over to
// several files of about 128 MiB writes such files, and a reader that
// took each task for a file (DuckDB handed the paths, compaction's merge,
// the live list a replace commit removes, a count of files or rows) read
// those files two or three times. Every planner of this package goes
// through planFiles, which gives one task per live file.

// planFiles runs plan (a PlanFiles of a Scan or an incremental scan) and
// joins the tasks of each data file back into one task covering the whole
// file, in the plan's order of first appearance. The tasks of one file must
// tile it exactly: ranges that overlap or leave a gap mean the plan names
// the file twice (or names part of it), and that is ErrRepeatedFile naming
// the file and its ranges, never a list a reader would count twice.
func planFiles(ctx context.Context, ident string, plan func(context.Context) ([]icetable.FileScanTask, error)) ([]icetable.FileScanTask, error) {
	tasks, err := plan(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files of %s: %w", ident, err)
	}
	return wholeFiles(ident, tasks)
}

// wholeFiles is planFiles' join of one plan's tasks.
func wholeFiles(ident string, tasks []icetable.FileScanTask) ([]icetable.FileScanTask, error) {
	byPath := make(map[string][]icetable.FileScanTask, len(tasks))
	order := make([]string, 0, len(tasks))
	for _, t := range tasks {
		p := t.File.FilePath()
		if _, ok := byPath[p]; !ok {
			order = append(order, p)
		}
		byPath[p] = append(byPath[p], t)
	}
	out := make([]icetable.FileScanTask, 0, len(order))
	for _, p := range order {
		parts := byPath[p]
		whole := parts[0]
		size := whole.File.FileSizeBytes()
		if len(parts) > 1 {
			slices.SortFunc(parts, func(a, b icetable.FileScanTask) int { return cmp.Compare(a.Start, b.Start) })
		}
		var end int64
		for _, t := range parts {
			if t.Start != end || t.Length <= 0 || t.File.FileSizeBytes() != size || t.File.Count() != whole.File.Count() {
				return nil, fmt.Errorf("plan files of %s: %w: %s (%d bytes) as %s", ident, ErrRepeatedFile, p, size, ranges(parts))
			}
			end = t.Start + t.Length
		}
		if end != size {
			return nil, fmt.Errorf("plan files of %s: %w: %s (%d bytes) as %s", ident, ErrRepeatedFile, p, size, ranges(parts))
		}
		whole.Start, whole.Length = 0, size
		out = append(out, whole)
	}
	return out, nil
}

// ranges renders tasks' byte ranges for an error.
func ranges(tasks []icetable.FileScanTask) string {
	s := ""
	for i, t := range tasks {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("[%d, %d)", t.Start, t.Start+t.Length)
	}
	return s
}
