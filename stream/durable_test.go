package stream

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"lakehouse/internal/durable"
)

// TestCheckpointWritesAreFsynced: every checkpoint file (a state version,
// the query id, the entry log when it is created) is fsynced before it is
// renamed into place and its directory after; every offset and commit
// entry appended to the log is followed by an fsync of the log; and
// opening a checkpoint at a new path fsyncs the parent of every directory
// it created (not only the innermost one). An fsync that fails (EIO) fails
// the write with that error, and the entry is not readable.
func TestCheckpointWritesAreFsynced(t *testing.T) {
	var synced []string
	var failFiles bool
	orig := durable.Fsync
	t.Cleanup(func() { durable.Fsync = orig })
	durable.Fsync = func(f *os.File) error {
		synced = append(synced, f.Name())
		if st, err := f.Stat(); err == nil && !st.IsDir() && failFiles {
			return syscall.EIO
		}
		return orig(f)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "checkpoints", "bronze")
	cp, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, filepath.Join(root, "checkpoints"), dir} {
		if !slices.Contains(synced, d) {
			t.Errorf("opening a new checkpoint did not fsync %s (synced %q)", d, synced)
		}
	}

	writes := []struct {
		dir, name string
		write     func() error
	}{
		{dir, "metadata", func() error { return cp.SetQueryID("q1", "bronze") }},
		{filepath.Join(dir, "state"), "7", func() error { return cp.SaveState(7, []byte("state")) }},
	}
	for _, w := range writes {
		synced = nil
		if err := w.write(); err != nil {
			t.Fatalf("write %s/%s: %v", w.dir, w.name, err)
		}
		if len(synced) != 2 || !strings.HasPrefix(synced[0], filepath.Join(w.dir, tempPrefix+w.name+"-")) || synced[1] != w.dir {
			t.Errorf("writing %s/%s fsynced %q, want its temp file, then its directory", w.dir, w.name, synced)
		}
	}
	// The first entry creates the log (temp file, its directory), then
	// appends; later entries append and fsync the log only.
	logPath := filepath.Join(dir, "log")
	synced = nil
	if err := cp.WriteOffsets(OffsetEntry{Batch: 7, Start: Offset(`{"0":1}`), End: Offset(`{"0":2}`)}); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 3 || !strings.HasPrefix(synced[0], filepath.Join(dir, tempPrefix+"log-")) || synced[1] != dir || synced[2] != logPath {
		t.Errorf("the first offset entry fsynced %q, want the new log's temp file, its directory, then the log", synced)
	}
	synced = nil
	if err := cp.WriteCommit(CommitEntry{Batch: 7}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(synced, []string{logPath}) {
		t.Errorf("a commit entry fsynced %q, want the log", synced)
	}

	failFiles = true
	if err := cp.WriteOffsets(OffsetEntry{Batch: 8, Start: Offset(`{"0":2}`), End: Offset(`{"0":3}`)}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("offset entry with a failing fsync: got %v, want EIO", err)
	}
	if _, err := cp.Offsets(8); !errors.Is(err, ErrNoEntry) {
		t.Fatalf("an offset entry whose fsync failed: got %v, want ErrNoEntry", err)
	}
	// Its record could not be cut off either (the fsync after the cut
	// fails too): the log refuses every later append until reopened.
	failFiles = false
	if err := cp.WriteOffsets(OffsetEntry{Batch: 8, Start: Offset(`{"0":2}`), End: Offset(`{"0":3}`)}); err == nil {
		t.Fatal("an append after an append that could not be undone succeeded")
	}
	cp.Close()
	if err := cp.WriteOffsets(OffsetEntry{Batch: 8, Start: Offset(`{"0":2}`), End: Offset(`{"0":3}`)}); err != nil {
		t.Fatalf("append after reopening: %v", err)
	}
	if e, err := cp.Commit(7); err != nil || e.Batch != 7 {
		t.Fatalf("commit 7 after reopening: %+v %v", e, err)
	}
}
