package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/internal/avrocheck"
	"lakehouse/table"
)

// TestEveryTablesManifestsReadStrictly: after the demo (run's pipeline
// with a marts refresh), every manifest list and manifest of every
// snapshot of every table (bronze, silver, sessions, the DLQ table, ops,
// gold) reads through a strict deflate reader: no empty stored block
// (the sync-flush-style ending icebird's inflater fails on), the last
// block final, nothing after it; and every manifest is as long as its
// manifest list records.
func TestEveryTablesManifestsReadStrictly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var out strings.Builder
	if code := run([]string{"demo", "--data", dir, "--events", "400", "--loops", "1", "--rate", "0"}, &out, &out); code != 0 {
		t.Fatalf("demo exited %d:\n%s", code, out.String())
	}
	ctx := context.Background()
	lake, err := table.Open(ctx, table.Config{Dir: dir, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	names, err := lake.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, tablesWithSnapshots, stored := 0, 0, 0
	for _, name := range names {
		i := strings.LastIndexByte(name, '.')
		tbl, err := lake.Catalog().LoadTable(ctx, icetable.Identifier{name[:i], name[i+1:]})
		if err != nil {
			t.Fatal(err)
		}
		fsys, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		read := func(path string) []byte {
			t.Helper()
			f, err := fsys.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		check := func(path string, b []byte) {
			t.Helper()
			f, err := avrocheck.Check(b)
			if err != nil {
				t.Errorf("%s: %s: %v", name, filepath.Base(path), err)
				return
			}
			for _, blocks := range f.Blocks {
				for _, bl := range blocks {
					if bl.Type == 0 {
						stored++
					}
				}
			}
			files++
		}
		seen := map[string]bool{}
		snaps := tbl.Metadata().Snapshots()
		if len(snaps) > 0 {
			tablesWithSnapshots++
		}
		for _, s := range snaps {
			check(s.ManifestList, read(s.ManifestList))
			ms, err := s.Manifests(fsys)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if seen[m.FilePath()] {
					continue
				}
				seen[m.FilePath()] = true
				b := read(m.FilePath())
				if int64(len(b)) != m.Length() {
					t.Errorf("%s: %s: %d bytes, the manifest list records %d", name, filepath.Base(m.FilePath()), len(b), m.Length())
				}
				check(m.FilePath(), b)
			}
		}
	}
	if tablesWithSnapshots < 6 || files < 20 {
		t.Fatalf("inconclusive: %d tables with snapshots, %d files read", tablesWithSnapshots, files)
	}
	t.Logf("%d files of %d tables (%d with snapshots) read strictly; %d non-empty stored blocks among them", files, len(names), tablesWithSnapshots, stored)
}
