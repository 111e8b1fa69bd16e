package marts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"lakehouse/broker"
	"lakehouse/table"
)

// row is one table row by column name; absent nullable columns are NULL.
type row map[string]any

// recordOf builds one Arrow record of schema from rows.
func recordOf(t testing.TB, schema *arrow.Schema, rows []row) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, r := range rows {
		for i, f := range schema.Fields() {
			v, ok := r[f.Name]
			if !ok || v == nil {
				if !f.Nullable {
					t.Fatalf("record: required column %s missing in %v", f.Name, r)
				}
				b.Field(i).AppendNull()
				continue
			}
			if n, ok := v.(int); ok {
				v = int64(n)
			}
			if err := appendValue(b.Field(i), v); err != nil {
				t.Fatalf("record: column %s: %v", f.Name, err)
			}
		}
	}
	return b.NewRecordBatch()
}

func openTestLake(t testing.TB, dir string) *table.Lake {
	t.Helper()
	return openTestLakeWith(t, table.Config{Dir: dir})
}

// openTestLakeWith opens a lake with cfg and creates its tables.
func openTestLakeWith(t testing.TB, cfg table.Config) *table.Lake {
	t.Helper()
	ctx := context.Background()
	lake, err := table.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open lake: %v", err)
	}
	t.Cleanup(func() { _ = lake.Close() })
	if err := lake.EnsureTables(ctx); err != nil {
		t.Fatalf("ensure tables: %v", err)
	}
	return lake
}

func commit(t testing.TB, lake *table.Lake, ident, query string, id int64, schema *arrow.Schema, rows []row) table.Result {
	t.Helper()
	rec := recordOf(t, schema, rows)
	defer rec.Release()
	res, err := lake.CommitBatch(context.Background(), ident, table.Batch{
		Query: query, ID: id, Offsets: fmt.Sprint(id), Records: []arrow.RecordBatch{rec},
	})
	if err != nil {
		t.Fatalf("commit %s batch %d: %v", ident, id, err)
	}
	return res
}

var t0 = time.Date(2026, 2, 26, 14, 0, 0, 0, time.UTC)

// edit returns a silver.edits row.
func edit(id string, at time.Time, wiki, typ, title, user string, bot bool, delta int64) row {
	r := row{
		"event_id": id, "event_time": at, "intake_time": at.Add(2 * time.Second), "wiki": wiki, "type": typ,
		"namespace": int32(0), "title": title, "user": user, "bot": bot, "minor": false,
		"length_new": 1000 + delta, "byte_delta": delta, "rev_new": int64(5_000_000_000),
		"server_name": wiki + ".org", "src_partition": int32(0), "src_offset": int64(0),
		"processed_time": at.Add(time.Minute),
	}
	if typ == "edit" {
		r["length_old"] = int64(1000)
		r["rev_old"] = int64(4_999_999_999)
	}
	return r
}

// fixtureEdits is the fixed silver input of the golden tests: two wikis, two
// days, three hours, bots and humans, new pages, growing and shrinking edits.
func fixtureEdits() []row {
	type e struct {
		min         int // minutes after t0
		wiki, typ   string
		title, user string
		bot         bool
		delta       int64
	}
	es := []e{
		{0, "enwiki", "edit", "Go", "Alice", false, 120},
		{3, "enwiki", "edit", "Go", "Bob", false, -40},
		{7, "enwiki", "new", "DuckDB", "Alice", false, 2500},
		{12, "enwiki", "edit", "Go", "Alice", false, 15},
		{20, "enwiki", "edit", "Rust", "TidyBot", true, -300},
		{25, "enwiki", "edit", "Go", "TidyBot", true, 0},
		{31, "dewiki", "edit", "Berlin", "Klaus", false, 60},
		{44, "dewiki", "new", "Iceberg (Format)", "Klaus", false, 1800},
		{59, "enwiki", "edit", "DuckDB", "Bob", false, 33},
		{61, "enwiki", "edit", "Go", "Carol", false, -7},
		{75, "enwiki", "edit", "DuckDB", "Carol", false, 210},
		{90, "dewiki", "edit", "Berlin", "Greta", false, -12},
		{95, "dewiki", "edit", "Berlin", "Klaus", false, 5},
		{110, "enwiki", "edit", "Go", "Alice", false, 44},
		{118, "enwiki", "edit", "Go", "TidyBot", true, -1},
		{60*19 + 5, "enwiki", "edit", "Rust", "Bob", false, 18},  // 2026-02-27 09:05
		{60*19 + 6, "enwiki", "edit", "Rust", "Bob", false, -18}, // same page again
		{60*19 + 30, "enwiki", "new", "Lakehouse", "Dave", false, 900},
		{60*19 + 40, "dewiki", "edit", "München", "Greta", false, 70},
		{60*19 + 50, "enwiki", "edit", "Rust", "Alice", false, 3},
	}
	rows := make([]row, len(es))
	for i, x := range es {
		rows[i] = edit(fmt.Sprintf("ev-%02d", i), t0.Add(time.Duration(x.min)*time.Minute), x.wiki, x.typ, x.title, x.user, x.bot, x.delta)
		rows[i]["src_offset"] = int64(i)
	}
	return rows
}

func session(id, wiki, user string, bot bool, startMin, lenSec int, edits, pages, added, removed int64) row {
	start := t0.Add(time.Duration(startMin) * time.Minute)
	return row{"session_id": id, "wiki": wiki, "user": user, "bot": bot,
		"session_start": start, "session_end": start.Add(time.Duration(lenSec) * time.Second),
		"edits": edits, "pages": pages, "bytes_added": added, "bytes_removed": removed,
		"processed_time": start.Add(time.Hour)}
}

func fixtureSessions() []row {
	return []row{
		session("s1", "enwiki", "Alice", false, 0, 720, 3, 2, 2635, 0),
		session("s2", "enwiki", "Bob", false, 3, 0, 1, 1, 0, 40),
		session("s3", "enwiki", "TidyBot", true, 20, 300, 2, 2, 0, 300),
		session("s4", "dewiki", "Klaus", false, 31, 780, 2, 2, 1860, 0),
		session("s5", "enwiki", "Carol", false, 61, 840, 2, 2, 210, 7),
		session("s6", "enwiki", "Bob", false, 60*19+5, 60, 2, 1, 18, 18),
		session("s7", "dewiki", "Greta", false, 60*19+40, 0, 1, 1, 70, 0),
	}
}

// bronzeRow returns a bronze row carrying a minimal recentchange event.
func bronzeRow(partition int32, offset int64, typ string, at time.Time) row {
	ev := map[string]any{"meta": map[string]any{"id": fmt.Sprintf("b-%d-%d", partition, offset), "domain": "en.wikipedia.org"},
		"type": typ, "timestamp": at.Unix(), "wiki": "enwiki", "user": "Alice"}
	js, _ := json.Marshal(ev)
	return row{"broker_partition": partition, "broker_offset": offset, "broker_ts": at.Add(time.Second), "key": nil,
		"value": string(js), "ingest_ts": at.Add(2 * time.Second)}
}

// fakeLog is a broker.Log whose Offsets are fixed; other methods are unused.
type fakeLog struct {
	broker.Log
	offsets []broker.PartitionOffsets
}

func (f fakeLog) Offsets(ctx context.Context, topic string) ([]broker.PartitionOffsets, error) {
	if topic != DefaultTopic {
		return nil, broker.ErrUnknownTopic
	}
	return f.offsets, nil
}

// fixtureLake is a lake holding the fixed silver, sessions and bronze input
// (bronze: partition 0 offsets 0..len-1, all of them in the broker).
func fixtureLake(t testing.TB) (*table.Lake, fakeLog) {
	t.Helper()
	return fixtureLakeWith(t, table.Config{Dir: t.TempDir()})
}

// fixtureLakeWith is fixtureLake on a lake opened with cfg.
func fixtureLakeWith(t testing.TB, cfg table.Config) (*table.Lake, fakeLog) {
	t.Helper()
	lake := openTestLakeWith(t, cfg)
	edits := fixtureEdits()
	commit(t, lake, table.SilverEdits, "silver", 0, table.SilverEditsSchema, edits[:10])
	commit(t, lake, table.SilverEdits, "silver", 1, table.SilverEditsSchema, edits[10:])
	commit(t, lake, table.EditorSessions, "sessions", 0, table.EditorSessionsSchema, fixtureSessions())
	var bronze []row
	for i, e := range edits {
		bronze = append(bronze, bronzeRow(0, int64(i), e["type"].(string), e["event_time"].(time.Time)))
	}
	commit(t, lake, table.Bronze, "bronze", 0, table.BronzeSchema, bronze)
	return lake, fakeLog{offsets: []broker.PartitionOffsets{{Partition: 0, Start: 0, End: int64(len(bronze))}}}
}

// s3Config is a lake configuration with its warehouse on an in-memory S3
// (gofakes3 on 127.0.0.1) and its data directory in dir.
func s3Config(t testing.TB, dir string) table.Config {
	t.Helper()
	mem := s3mem.New()
	if err := mem.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(mem).Server())
	t.Cleanup(srv.Close)
	return table.Config{Dir: dir, Warehouse: "s3://lake/warehouse",
		S3: table.S3Config{Endpoint: srv.URL, Region: "us-east-1", AccessKeyID: "test", SecretAccessKey: "test"}}
}
