package table

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
)

func dataFile(t *testing.T, path string, rows, size int64) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, rows, size)
	if err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

// TestWholeFilesJoinsSplitsAndRefusesRepeats: the tasks of a split file
// become one task over the whole file; a plan that names a file twice (or
// part of it, or overlapping parts) is ErrRepeatedFile naming the file.
func TestWholeFilesJoinsSplitsAndRefusesRepeats(t *testing.T) {
	a := dataFile(t, "/wh/a.parquet", 300, 3000)
	b := dataFile(t, "/wh/b.parquet", 100, 1000)
	task := func(f iceberg.DataFile, start, length int64) icetable.FileScanTask {
		return icetable.FileScanTask{File: f, Start: start, Length: length}
	}
	got, err := wholeFiles("t.x", []icetable.FileScanTask{task(a, 2000, 1000), task(b, 0, 1000), task(a, 0, 1000), task(a, 1000, 1000)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].File.FilePath() != "/wh/a.parquet" || got[0].Start != 0 || got[0].Length != 3000 ||
		got[1].File.FilePath() != "/wh/b.parquet" || got[1].Length != 1000 {
		t.Errorf("joined: %+v, want a [0, 3000) then b [0, 1000)", got)
	}
	bad := map[string][]icetable.FileScanTask{
		"listed twice":                       {task(b, 0, 1000), task(a, 0, 3000), task(b, 0, 1000)},
		"overlapping":                        {task(a, 0, 2000), task(a, 1000, 2000)},
		"a part missing":                     {task(a, 0, 1000), task(a, 2000, 1000)},
		"short of the end":                   {task(a, 0, 1000)},
		"two entries, one path, other sizes": {task(b, 0, 1000), task(dataFile(t, "/wh/b.parquet", 100, 2000), 1000, 1000)},
	}
	for name, tasks := range bad {
		_, err := wholeFiles("t.x", tasks)
		if !errors.Is(err, ErrRepeatedFile) {
			t.Errorf("%s: %v, want ErrRepeatedFile", name, err)
			continue
		}
		if !strings.Contains(err.Error(), ".parquet") || !strings.Contains(err.Error(), "t.x") {
			t.Errorf("%s: %q does not name the table and the file", name, err)
		}
	}
}
