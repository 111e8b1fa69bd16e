package table_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/table"
)

// TestLocalFileCopiesRemoteFiles: on an S3 warehouse LocalFile gives a
// local copy of each data file (whole Parquet files, under
// <data>/cache/files), downloads it once, trims copies least recently asked
// for beyond Config.FileCacheBytes but never one asked for within ten
// minutes; a read-only lake copies to a temporary directory, writes nothing
// in the data directory and removes its copies on Close. A local path is
// returned as it is.
func TestLocalFileCopiesRemoteFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := backends()[1].cfg(t, dir) // s3
	cfg.FileCacheBytes = 1           // every copy but the ones in use is over budget
	l, err := table.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range int64(2) {
		mustCommit(t, l, table.Bronze, batchOf("bronze", i, bronzeRecord(0, i*10, 10)))
	}
	f, err := l.DataFiles(ctx, table.Bronze)
	if err != nil || len(f.Paths) < 2 || !strings.HasPrefix(f.Paths[0], "s3://") {
		t.Fatalf("data files: %v %v; want two or more s3:// files", f.Paths, err)
	}
	var copies []string
	for _, p := range f.Paths {
		local, err := l.LocalFile(ctx, p)
		if err != nil {
			t.Fatalf("local copy of %s: %v", p, err)
		}
		b, err := os.ReadFile(local)
		if err != nil || len(b) < 8 || !bytes.HasPrefix(b, []byte("PAR1")) || !bytes.HasSuffix(b, []byte("PAR1")) {
			t.Fatalf("copy %s of %s: %d bytes, %v; want a whole Parquet file", local, p, len(b), err)
		}
		if filepath.Dir(local) != filepath.Join(dir, "cache", "files") {
			t.Errorf("copy %s is not under %s/cache/files", local, dir)
		}
		copies = append(copies, local)
	}
	// Asked for again: the same copy, no download (its mtime moves).
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(copies[0], old, old); err != nil {
		t.Fatal(err)
	}
	if again, err := l.LocalFile(ctx, f.Paths[0]); err != nil || again != copies[0] {
		t.Fatalf("second ask: %s, %v; want %s", again, err, copies[0])
	}
	// An hour unused, over budget: the next download trims it; the copy
	// asked for within ten minutes stays.
	if err := os.Chtimes(copies[0], old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(copies[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := l.LocalFile(ctx, f.Paths[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(copies[0]); !os.IsNotExist(err) {
		t.Errorf("a copy unused for an hour, over budget, was kept (%v)", err)
	}
	if _, err := os.Stat(copies[1]); err != nil {
		t.Errorf("the copy just asked for was trimmed: %v", err)
	}
	if p, err := l.LocalFile(ctx, "/some/local/file.parquet"); err != nil || p != "/some/local/file.parquet" {
		t.Errorf("a local path: got %s, %v", p, err)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ro := cfg
	ro.ReadOnly = true
	rl, err := table.Open(ctx, ro)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(dir, "cache", "files", "*"))
	local, err := rl.LocalFile(ctx, f.Paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(local, dir) {
		t.Errorf("a read-only lake copied into its data directory: %s", local)
	}
	if after, _ := filepath.Glob(filepath.Join(dir, "cache", "files", "*")); len(after) != len(before) {
		t.Errorf("a read-only lake changed %s/cache/files: %d -> %d files", dir, len(before), len(after))
	}
	if err := rl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(local); !os.IsNotExist(err) {
		t.Errorf("a read-only lake's copy %s outlived Close (%v)", local, err)
	}
}
