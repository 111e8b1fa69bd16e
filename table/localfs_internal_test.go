package table

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/internal/durable"
)

// TestDurableFSMarksAndSyncsDirs: the bookkeeping of directories that
// gained entries: a write marks its directory and every directory it had to
// create, and syncDirtyDirs clears them (TestCommitFsyncsFilesAndDirs shows
// the fsyncs themselves).
func TestDurableFSMarksAndSyncsDirs(t *testing.T) {
	root := t.TempDir()
	name := filepath.Join(root, "a", "b", "f.bin")
	var fs durableFS
	if err := syncDirtyDirs(); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteFile("file://"+name, []byte("x")); err != nil {
		t.Fatalf("write: %v", err)
	}
	dirtyMu.Lock()
	_, a := dirtyDirs[root]
	_, b := dirtyDirs[filepath.Join(root, "a")]
	_, c := dirtyDirs[filepath.Join(root, "a", "b")]
	dirtyMu.Unlock()
	if !a || !b || !c {
		t.Fatalf("dirty dirs: got root=%v a=%v a/b=%v, want all marked", a, b, c)
	}
	if err := syncDirtyDirs(); err != nil {
		t.Fatal(err)
	}
	dirtyMu.Lock()
	n := len(dirtyDirs)
	dirtyMu.Unlock()
	if n != 0 {
		t.Fatalf("dirty dirs after sync: got %d, want 0", n)
	}
	got, err := os.ReadFile(name)
	if err != nil || string(got) != "x" {
		t.Fatalf("read back: got %q %v", got, err)
	}
}

// TestCommitFsyncsFilesAndDirs: a CommitBatch on local disk fsyncs every
// file it wrote (the Parquet data file, the manifest, the manifest list, the
// metadata.json) and every directory they were written into before it
// returns, so what the committed pointer names survives a power cut.
func TestCommitFsyncsFilesAndDirs(t *testing.T) {
	ctx := context.Background()
	l := openWithTables(t)
	synced := map[string]bool{}
	replaceFsync(t, func(f *os.File) error {
		synced[f.Name()] = true
		return nil
	})
	before := filesUnder(t, l.Warehouse())
	if _, err := l.CommitBatch(ctx, StreamProgress, Batch{Query: "q", ID: 1, Records: []arrow.RecordBatch{progressRecord()}}); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, f := range filesUnder(t, l.Warehouse()) {
		if slices.Contains(before, f) {
			continue
		}
		switch {
		case strings.HasSuffix(f, ".parquet"):
			kinds["data"]++
		case strings.HasSuffix(f, ".metadata.json"):
			kinds["metadata"]++
		case strings.HasSuffix(f, ".avro"):
			kinds["manifest"]++
		}
		if !synced[f] {
			t.Errorf("the commit wrote %s and did not fsync it", f)
		}
		if !synced[filepath.Dir(f)] {
			t.Errorf("the commit wrote %s and did not fsync its directory", f)
		}
	}
	if kinds["data"] == 0 || kinds["metadata"] == 0 || kinds["manifest"] < 2 {
		t.Fatalf("inconclusive: the commit wrote %v, want a data file, a metadata file, a manifest and a manifest list", kinds)
	}
}

// filesUnder lists the regular files under dir.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFsyncFailureFailsCommit: an fsync error (EIO, as from a failing disk)
// fails CommitBatch with that error and commits nothing.
func TestFsyncFailureFailsCommit(t *testing.T) {
	for _, target := range []string{"file", "dir"} {
		t.Run(target, func(t *testing.T) {
			ctx := context.Background()
			l := openWithTables(t)
			orig := replaceFsync(t, func(f *os.File) error {
				if st, err := f.Stat(); err == nil && st.IsDir() == (target == "dir") {
					return syscall.EIO
				}
				return nil
			})
			_, err := l.CommitBatch(ctx, StreamProgress, Batch{Query: "q", ID: 1, Records: []arrow.RecordBatch{progressRecord()}})
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("commit: got %v, want EIO", err)
			}
			durable.Fsync = orig
			if _, ok, err := l.LastCommitted(ctx, StreamProgress, "q"); err != nil || ok {
				t.Fatalf("marker after failed fsync: ok=%v err=%v, want none", ok, err)
			}
			if res, err := l.CommitBatch(ctx, StreamProgress, Batch{Query: "q", ID: 1, Records: []arrow.RecordBatch{progressRecord()}}); err != nil || !res.Committed {
				t.Fatalf("retry after disk recovers: got %+v %v", res, err)
			}
		})
	}
}

// openWithTables opens a lake in a temporary directory with its tables.
func openWithTables(t *testing.T) *Lake {
	t.Helper()
	ctx := context.Background()
	l, err := Open(ctx, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	return l
}

// replaceFsync makes durable.Fsync call check first (an error from it is
// returned instead of syncing) until the test ends; it returns the real
// one.
func replaceFsync(t *testing.T, check func(*os.File) error) func(*os.File) error {
	orig := durable.Fsync
	t.Cleanup(func() { durable.Fsync = orig })
	durable.Fsync = func(f *os.File) error {
		if err := check(f); err != nil {
			return err
		}
		return orig(f)
	}
	return orig
}

func progressRecord() arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, StreamProgressSchema)
	defer b.Release()
	for i, f := range StreamProgressSchema.Fields() {
		switch bb := b.Field(i).(type) {
		case *array.StringBuilder:
			bb.Append(f.Name)
		case *array.Int64Builder:
			bb.Append(int64(i))
		case *array.TimestampBuilder:
			if f.Nullable {
				bb.AppendNull()
			} else {
				bb.Append(arrow.Timestamp(1_700_000_000_000_000))
			}
		}
	}
	return b.NewRecordBatch()
}
