package stream

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/table"
)

// discardSink counts rows and keeps only the marker: it measures the engine
// and the broker read path without the table.
type discardSink struct {
	rows   int64
	marker Marker
	has    bool
}

func (d *discardSink) Commit(ctx context.Context, b Batch, rows []arrow.RecordBatch) (SinkResult, error) {
	if d.has && d.marker.Batch >= b.ID {
		return SinkResult{}, nil
	}
	n := countRows(rows)
	d.rows += n
	d.marker, d.has = Marker{Batch: b.ID, End: b.End, QueryID: b.QueryID}, true
	return SinkResult{Committed: true, Rows: n}, nil
}

func (d *discardSink) LastCommitted(ctx context.Context, query string) (Marker, bool, error) {
	return d.marker, d.has, nil
}

// benchBacklog is the backlog size of the drain benchmarks.
const benchBacklog = 1_000_000

// backlogBroker returns a broker holding n sample events over 4 partitions,
// built once per process per n.
var (
	backlogs    = map[int]string{}
	backlogDirs []string
)

func backlogBroker(b *testing.B, n int) string {
	b.Helper()
	if p, ok := backlogs[n]; ok {
		return p
	}
	// Not b.TempDir: the backlog outlives one benchmark function call and
	// is removed by TestMain.
	dir, err := os.MkdirTemp("", "stream-backlog-")
	if err != nil {
		b.Fatal(err)
	}
	backlogDirs = append(backlogDirs, dir)
	path := filepath.Join(dir, "broker.db")
	db := openBroker(b, path, 4)
	fill(b, db, n, 2000)
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	backlogs[n] = path
	return path
}

// BenchmarkEngineDrain drains the backlog through BrokerSource and the
// runner into a discarding sink: the ceiling without the table.
func BenchmarkEngineDrain(b *testing.B) {
	path := backlogBroker(b, benchBacklog)
	db := openBrokerNoCreate(b, path)
	defer db.Close()
	ctx := context.Background()
	bytes := storedBytes(b, db)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink := &discardSink{}
		q, err := New(Config{Name: "bronze", CheckpointDir: filepath.Join(b.TempDir(), fmt.Sprint(i)), Logger: slog.New(slog.DiscardHandler)},
			NewBrokerSource(db, testTopic, testSchema), nil, sink, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := q.Drain(ctx); err != nil {
			b.Fatal(err)
		}
		if sink.rows != benchBacklog {
			b.Fatalf("rows: got %d, want %d", sink.rows, benchBacklog)
		}
	}
	reportDrain(b, benchBacklog, bytes)
}

func reportDrain(b *testing.B, records, bytes int64) {
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(records)/sec, "records/s")
	b.ReportMetric(float64(bytes)/sec/1e6, "MB/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkBronzeDrain drains a backlog of 1,000,000 recorded Wikimedia
// events (4 partitions) from the bbolt broker into the Iceberg bronze table
// with the default batch cap (100,000 offsets per trigger), through the whole
// protocol: offset entry, Parquet data files, catalog commit with marker,
// commit entry, progress rows.
//
//	go test -bench BronzeDrain -run '^$' ./stream
func BenchmarkBronzeDrain(b *testing.B) {
	path := backlogBroker(b, benchBacklog)
	db := openBrokerNoCreate(b, path)
	defer db.Close()
	ctx := context.Background()
	bytes := storedBytes(b, db)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		lake := openLake(b, dir)
		b.StartTimer()
		logger := slog.New(slog.DiscardHandler)
		if testing.Verbose() {
			logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
		}
		q, err := NewBronze(db, lake, Config{DataDir: dir, Logger: logger})
		if err != nil {
			b.Fatal(err)
		}
		if err := q.Drain(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		want := int64((benchBacklog + DefaultMaxOffsetsPerTrigger - 1) / DefaultMaxOffsetsPerTrigger)
		if last, runs := q.Last(); runs != want || last.Lag != 0 {
			b.Fatalf("batches: got %d (lag %d), want %d (lag 0)", runs, last.Lag, want)
		}
		m, ok, err := lake.LastCommitted(ctx, table.Bronze, BronzeQuery)
		if err != nil || !ok {
			b.Fatalf("bronze marker: %v %v", ok, err)
		}
		if end, _ := ParsePartitionOffsets(Offset(m.Offsets)); end.Sum() != benchBacklog {
			b.Fatalf("bronze marker offsets: got %d, want %d", end.Sum(), benchBacklog)
		}
		lake.Close()
		b.StartTimer()
	}
	reportDrain(b, benchBacklog, bytes)
}
