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

// TestCheckpointWritesAreFsynced: every checkpoint file (the offset entry,
// the commit entry, a state version, the query id) is fsynced before it is
// renamed into place and its directory after, and opening a checkpoint at
// a new path fsyncs the parent of every directory it created (not only the
// innermost one). An fsync that fails (EIO) fails the write with that error.
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
		{filepath.Join(dir, "offsets"), "7", func() error {
			return cp.WriteOffsets(OffsetEntry{Batch: 7, Start: Offset(`{"0":1}`), End: Offset(`{"0":2}`)})
		}},
		{filepath.Join(dir, "commits"), "7", func() error { return cp.WriteCommit(CommitEntry{Batch: 7}) }},
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

	failFiles = true
	if err := cp.WriteOffsets(OffsetEntry{Batch: 8, Start: Offset(`{"0":2}`), End: Offset(`{"0":3}`)}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("offset entry with a failing fsync: got %v, want EIO", err)
	}
	if _, err := cp.Offsets(8); err == nil {
		t.Fatal("an offset entry whose fsync failed is readable")
	}
}
