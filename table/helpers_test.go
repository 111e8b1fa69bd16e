package table_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"lakehouse/table"
	"lakehouse/table/catalog"
	"lakehouse/table/restcatalog"
)

// backend opens Lakes on one storage kind; dir is the data directory.
type backend struct {
	name string
	cfg  func(t *testing.T, dir string) table.Config
}

// backends is the contract suite's list: local disk, S3 (gofakes3 in
// process on 127.0.0.1), and local disk with the tables in an Iceberg REST
// catalog (table/restcatalog over an embedded catalog, on 127.0.0.1).
func backends() []backend {
	return []backend{
		{name: "local", cfg: func(t *testing.T, dir string) table.Config {
			return table.Config{Dir: dir}
		}},
		{name: "s3", cfg: func(t *testing.T, dir string) table.Config {
			endpoint := fakeS3(t, "lake")
			return table.Config{
				Dir:       dir,
				Warehouse: "s3://lake/warehouse",
				S3: table.S3Config{
					Endpoint: endpoint, Region: "us-east-1",
					AccessKeyID: "test", SecretAccessKey: "test",
				},
			}
		}},
		{name: "rest", cfg: func(t *testing.T, dir string) table.Config {
			return table.Config{Dir: dir, Catalog: "rest+" + restCatalog(t, dir)}
		}},
	}
}

// restCatalog serves, over the Iceberg REST protocol on 127.0.0.1, an
// embedded catalog beside dir's warehouse (dir/rest-catalog.db; the tables
// under dir/warehouse) and returns its URL. Every call serves the same
// catalog file.
func restCatalog(t testing.TB, dir string) string {
	t.Helper()
	c, err := catalog.Open(context.Background(), filepath.Join(dir, "rest-catalog.db"), catalog.Options{
		Props: iceberg.Properties{"warehouse": filepath.Join(dir, "warehouse")},
	})
	if err != nil {
		t.Fatalf("open the REST server's catalog: %v", err)
	}
	srv := httptest.NewServer(restcatalog.New(c, restcatalog.Options{}))
	t.Cleanup(func() {
		srv.Close()
		_ = c.Close()
	})
	return srv.URL
}

// fakeS3 serves an in-memory S3 with the given buckets on 127.0.0.1.
func fakeS3(t testing.TB, buckets ...string) string {
	t.Helper()
	mem := s3mem.New()
	for _, b := range buckets {
		if err := mem.CreateBucket(b); err != nil {
			t.Fatalf("create bucket: %v", err)
		}
	}
	srv := httptest.NewServer(gofakes3.New(mem).Server())
	t.Cleanup(srv.Close)
	return srv.URL
}

func openLake(t testing.TB, cfg table.Config) *table.Lake {
	t.Helper()
	ctx := context.Background()
	l, err := table.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open lake: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if err := l.EnsureTables(ctx); err != nil {
		t.Fatalf("ensure tables: %v", err)
	}
	return l
}

var baseTime = time.Date(2026, 11, 28, 23, 59, 0, 0, time.UTC)

// bronzeRecord builds n bronze rows for partition p starting at offset off;
// broker timestamps straddle midnight so two day partitions are written.
func bronzeRecord(p int32, off int64, n int) arrow.RecordBatch {
	return bronzeRecordWith(memory.DefaultAllocator, p, off, n)
}

// bronzeRecordWith is bronzeRecord with its buffers from mem.
func bronzeRecordWith(mem memory.Allocator, p int32, off int64, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, table.BronzeSchema)
	defer b.Release()
	for i := range n {
		o := off + int64(i)
		ts := arrow.Timestamp(baseTime.Add(time.Duration(o) * time.Second).UnixMicro())
		b.Field(0).(*array.Int32Builder).Append(p)
		b.Field(1).(*array.Int64Builder).Append(o)
		b.Field(2).(*array.TimestampBuilder).Append(ts)
		if o%3 == 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("k%d", o))
		}
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf(`{"meta":{"id":"%d-%d"},"type":"edit"}`, p, o))
		b.Field(5).(*array.TimestampBuilder).Append(ts)
	}
	return b.NewRecordBatch()
}

func batchOf(query string, id int64, recs ...arrow.RecordBatch) table.Batch {
	return table.Batch{Query: query, ID: id, Offsets: fmt.Sprintf(`{"0":%d}`, id*100), Records: recs}
}

// scanOffsets scans ident and returns its row count and the bronze
// offsets seen (with multiplicity).
func scanOffsets(t testing.TB, l *table.Lake, ident string) (int64, map[int64]int) {
	t.Helper()
	recs, err := l.Scan(context.Background(), ident)
	if err != nil {
		t.Fatalf("scan %s: %v", ident, err)
	}
	var n int64
	seen := map[int64]int{}
	for _, r := range recs {
		n += r.NumRows()
		idx := r.Schema().FieldIndices("broker_offset")
		if ident == table.Bronze && len(idx) != 1 {
			t.Fatalf("scan %s: no broker_offset column in %s", ident, r.Schema())
		}
		if len(idx) == 1 {
			col := r.Column(idx[0]).(*array.Int64)
			for i := range col.Len() {
				seen[col.Value(i)]++
			}
		}
		r.Release()
	}
	return n, seen
}

func mustCommit(t testing.TB, l *table.Lake, ident string, b table.Batch) table.Result {
	t.Helper()
	res, err := l.CommitBatch(context.Background(), ident, b)
	if err != nil {
		t.Fatalf("commit %s/%d: %v", b.Query, b.ID, err)
	}
	return res
}

// mergeAll is a compaction policy that merges any two small files of a
// partition (the tests' tables hold a handful of tiny files).
var mergeAll = table.CompactPolicy{TargetBytes: 64 << 20, FanIn: 2}
