package table_test

import (
	"context"
	"encoding/xml"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/table"
)

// TestDropTable: DropTable removes a derived table's entry and its files
// (on local disk its directory, on S3 every object under its location),
// leaves its neighbour alone, is a no-op for a table that is not there,
// and refuses the appliance's own tables.
func TestDropTable(t *testing.T) {
	for _, b := range backends() {
		if b.name == "rest" {
			continue // the files are the REST server's to purge
		}
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := b.cfg(t, t.TempDir())
			l := openLake(t, cfg)
			rec := bronzeRecord(0, 0, 3)
			defer rec.Release()
			for _, id := range []string{"gold.mine", "gold.mine_too"} {
				if err := l.Overwrite(ctx, id, table.BronzeSchema, []arrow.RecordBatch{rec}, nil); err != nil {
					t.Fatal(err)
				}
			}
			// files lists what is stored under a table's location.
			files := func(name string) []string {
				if cfg.S3.Endpoint == "" {
					var out []string
					_ = filepath.WalkDir(filepath.Join(l.Warehouse(), "gold.db", name), func(p string, d fs.DirEntry, err error) error {
						if err == nil && !d.IsDir() {
							out = append(out, p)
						}
						return nil
					})
					return out
				}
				return s3Keys(t, cfg.S3.Endpoint, "lake", "warehouse/gold.db/"+name+"/")
			}
			if n := files("mine"); !slices.ContainsFunc(n, func(p string) bool { return strings.Contains(p, "/data/") }) ||
				!slices.ContainsFunc(n, func(p string) bool { return strings.Contains(p, "/metadata/") }) {
				t.Fatalf("inconclusive: the table's files are not where the test looks: %v", n)
			}
			before := len(files("mine_too"))
			if err := l.DropTable(ctx, "gold.mine"); err != nil {
				t.Fatal(err)
			}
			tables, err := l.Tables(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(tables, "gold.mine") || !slices.Contains(tables, "gold.mine_too") {
				t.Fatalf("tables after the drop: %v", tables)
			}
			if left := files("mine"); len(left) > 0 {
				t.Fatalf("the dropped table's files are still there: %v", left)
			}
			if f, err := l.DataFiles(ctx, "gold.mine_too"); err != nil || f.Rows != 3 || len(files("mine_too")) != before {
				t.Fatalf("the neighbour after the drop: %+v %v, %d files of %d", f, err, len(files("mine_too")), before)
			}
			if err := l.DropTable(ctx, "gold.mine"); err != nil {
				t.Fatalf("a second drop: %v", err)
			}
			for _, id := range []string{table.SilverEdits, table.Bronze, "ops.runs"} {
				if err := l.DropTable(ctx, id); !errors.Is(err, table.ErrOwnedTable) {
					t.Fatalf("drop %s: %v, want ErrOwnedTable", id, err)
				}
			}
		})
	}
}

// s3Keys lists the keys under prefix in bucket of the fake S3 at endpoint
// (ListObjectsV2, one page: the tests' tables are small).
func s3Keys(t *testing.T, endpoint, bucket, prefix string) []string {
	t.Helper()
	resp, err := http.Get(endpoint + "/" + bucket + "?list-type=2&max-keys=1000&prefix=" + url.QueryEscape(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Keys        []string `xml:"Contents>Key"`
		IsTruncated bool
	}
	if err := xml.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.IsTruncated {
		t.Fatalf("list %s/%s: %d %v (truncated %v)", bucket, prefix, resp.StatusCode, err, out.IsTruncated)
	}
	return out.Keys
}
