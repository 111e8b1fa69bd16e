package table_test

import (
	"context"
	"strings"
	"testing"

	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/internal/avrocheck"
	"lakehouse/table"
)

// TestManifestsPlainOnEveryBackend: on local disk, S3 and through a REST
// catalog, every manifest list and manifest of bronze after appends and a
// compaction reads through the strict deflate reader (no empty stored
// block, the last block final, nothing after it), and is as long as the
// manifest list records it.
func TestManifestsPlainOnEveryBackend(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			l := openLake(t, be.cfg(t, t.TempDir()))
			for id := range int64(4) {
				mustCommit(t, l, table.Bronze, batchOf("q", id, bronzeRecord(0, id*10, 10)))
			}
			if _, err := l.Compact(ctx, table.Bronze, mergeAll); err != nil {
				t.Fatal(err)
			}
			tbl, err := table.CatalogOf(l).LoadTable(ctx, icetable.Identifier{"bronze", "recentchange"})
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
				st, err := f.Stat()
				if err != nil {
					t.Fatal(err)
				}
				b := make([]byte, st.Size())
				if _, err := f.ReadAt(b, 0); err != nil && !strings.Contains(err.Error(), "EOF") {
					t.Fatal(err)
				}
				return b
			}
			files, lists := 0, 0
			seen := map[string]bool{}
			for _, snap := range tbl.Metadata().Snapshots() {
				if _, err := avrocheck.Check(read(snap.ManifestList)); err != nil {
					t.Errorf("manifest list %s: %v", snap.ManifestList, err)
				}
				lists++
				ms, err := snap.Manifests(fsys)
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
						t.Errorf("manifest %s: %d bytes, the list records %d", m.FilePath(), len(b), m.Length())
					}
					if _, err := avrocheck.Check(b); err != nil {
						t.Errorf("manifest %s: %v", m.FilePath(), err)
					}
					files++
				}
			}
			if lists < 5 || files < 5 {
				t.Fatalf("inconclusive: %d manifest lists and %d manifests read", lists, files)
			}
		})
	}
}
