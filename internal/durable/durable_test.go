package durable

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// recordSyncs replaces Fsync for the test with one that records the name of
// every file or directory synced and fails those fail says so.
func recordSyncs(t *testing.T, fail func(name string, dir bool) error) *[]string {
	t.Helper()
	var names []string
	orig := Fsync
	t.Cleanup(func() { Fsync = orig })
	Fsync = func(f *os.File) error {
		names = append(names, f.Name())
		if fail != nil {
			st, err := f.Stat()
			if err != nil {
				return err
			}
			if err := fail(f.Name(), st.IsDir()); err != nil {
				return err
			}
		}
		return orig(f)
	}
	return &names
}

// TestWriteFileSyncsFileThenDir: the data reach the disk before the rename
// makes them visible under the name, and the rename before WriteFile
// returns: the temp file is synced, then the directory.
func TestWriteFileSyncsFileThenDir(t *testing.T) {
	dir := t.TempDir()
	synced := recordSyncs(t, nil)
	if err := WriteFile(dir, "entry", []byte("new")); err != nil {
		t.Fatal(err)
	}
	got := *synced
	if len(got) != 2 || !strings.HasPrefix(filepath.Base(got[0]), TempPrefix+"entry-") || got[1] != dir {
		t.Fatalf("fsyncs: got %q, want the temp file of entry, then %s", got, dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "entry")); err != nil || string(b) != "new" {
		t.Fatalf("read back: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want only the file", len(ents))
	}
}

// TestWriteFileFailedSyncKeepsOldContent: a file fsync that fails (EIO, as
// from a failing disk) fails WriteFile with that error, leaves the old
// content under the name and no temp file.
func TestWriteFileFailedSyncKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(dir, "entry", []byte("old")); err != nil {
		t.Fatal(err)
	}
	recordSyncs(t, func(_ string, isDir bool) error {
		if !isDir {
			return syscall.EIO
		}
		return nil
	})
	err := WriteFile(dir, "entry", []byte("new"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("write with a failing fsync: got %v, want EIO", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "entry")); err != nil || string(b) != "old" {
		t.Fatalf("after the failed write: %q, %v; want the old content", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("directory holds %d entries after the failed write, want only the file", len(ents))
	}
}

// TestMkdirAllReportsEveryNewParent: each directory MkdirAll creates is an
// entry in its parent, and every such parent is reported, not only the
// innermost one; an existing directory reports none.
func TestMkdirAllReportsEveryNewParent(t *testing.T) {
	root := t.TempDir()
	parents, err := MkdirAll(filepath.Join(root, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "a", "b"), filepath.Join(root, "a"), root}
	if !slices.Equal(parents, want) {
		t.Fatalf("parents: got %q, want %q", parents, want)
	}
	synced := recordSyncs(t, nil)
	if err := SyncDirs(parents); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(*synced, want) {
		t.Fatalf("SyncDirs synced %q, want %q", *synced, want)
	}
	again, err := MkdirAll(filepath.Join(root, "a", "b", "c"))
	if err != nil || len(again) != 0 {
		t.Fatalf("MkdirAll of an existing directory: %q, %v; want nothing to sync", again, err)
	}
}

// TestRemoveTemps deletes what an interrupted WriteFile leaves, nothing else.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{TempPrefix + "entry-123", "entry", "other"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveTemps(dir); err != nil {
		t.Fatal(err)
	}
	var left []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"entry", "other"}) {
		t.Fatalf("left after RemoveTemps: %q", left)
	}
}
