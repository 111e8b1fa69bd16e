package stream

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/broker"
	"lakehouse/internal/sample"
)

const testTopic = "recentchange"

// testSchema mirrors the bronze schema for engine tests that do not use the
// real table.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "broker_partition", Type: arrow.PrimitiveTypes.Int32},
	{Name: "broker_offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "broker_ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "key", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "value", Type: arrow.BinaryTypes.String},
	{Name: "ingest_ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
}, nil)

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// sampleEvents returns the 50 recorded Wikimedia events.
func sampleEvents(t testing.TB) [][]byte {
	t.Helper()
	return sample.Events()
}

func openBroker(t testing.TB, path string, partitions int) *broker.DB {
	t.Helper()
	db, err := broker.Open(path, broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTopic(context.Background(), testTopic, partitions); err != nil {
		t.Fatal(err)
	}
	return db
}

// fill appends n records (sample events, cycled) spread over partitions by
// key, in appends of per records.
func fill(t testing.TB, log broker.Log, n, per int) {
	t.Helper()
	events := sampleEvents(t)
	ctx := context.Background()
	ts := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += per {
		var b broker.Batch
		for j := i; j < min(n, i+per); j++ {
			b.Records = append(b.Records, broker.Record{
				Topic: testTopic, Partition: broker.AnyPartition,
				Key:       []byte(fmt.Sprintf("k%d", j)),
				Value:     events[j%len(events)],
				Timestamp: ts.Add(time.Duration(j) * time.Millisecond),
			})
		}
		if _, err := log.Append(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
}

func endOffsets(t testing.TB, log broker.Log) map[int]int64 {
	t.Helper()
	out := map[int]int64{}
	for _, p := range testPartitions(t, log) {
		out[p.Partition] = p.End
	}
	return out
}

// testPartitions returns the test topic's partitions as the log reports them.
func testPartitions(t testing.TB, log broker.Log) []broker.PartitionOffsets {
	t.Helper()
	parts, err := log.Offsets(context.Background(), testTopic)
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

// pair is one (partition, offset) landed in a sink.
type pair struct {
	p int
	o int64
}

// pairsOf extracts the broker_partition and broker_offset columns.
func pairsOf(recs []arrow.RecordBatch) []pair {
	var out []pair
	for _, r := range recs {
		var pc, oc int = -1, -1
		for i, f := range r.Schema().Fields() {
			switch f.Name {
			case "broker_partition":
				pc = i
			case "broker_offset":
				oc = i
			}
		}
		for i := 0; i < int(r.NumRows()); i++ {
			var p int
			switch c := r.Column(pc).(type) {
			case *array.Int32:
				p = int(c.Value(i))
			case *array.Int64:
				p = int(c.Value(i))
			}
			out = append(out, pair{p, r.Column(oc).(*array.Int64).Value(i)})
		}
	}
	return out
}

// checkExactlyOnce compares landed pairs with the broker's end offsets: per
// partition, the rows count equals the end offset and every offset appears
// once. It returns the number of duplicates.
func checkExactlyOnce(t *testing.T, pairs []pair, ends map[int]int64, wantDups bool) int {
	t.Helper()
	seen := map[pair]int{}
	perPart := map[int]int64{}
	dups := 0
	for _, p := range pairs {
		seen[p]++
		if seen[p] > 1 {
			dups++
		}
		perPart[p.p]++
	}
	var total int64
	for p, end := range ends {
		total += end
		for o := int64(0); o < end; o++ {
			if seen[pair{p, o}] == 0 {
				t.Errorf("partition %d offset %d missing", p, o)
				break
			}
		}
		if !wantDups && perPart[p] != end {
			t.Errorf("partition %d: rows got %d, want %d (end offset)", p, perPart[p], end)
		}
	}
	if !wantDups {
		if dups != 0 {
			t.Errorf("duplicates got %d, want 0", dups)
		}
		if int64(len(seen)) != total || int64(len(pairs)) != total {
			t.Errorf("rows got %d, distinct %d, want %d", len(pairs), len(seen), total)
		}
	}
	return dups
}

// memSink is an in-memory Sink with the table's marker semantics.
type memSink struct {
	mu      sync.Mutex
	batches map[string][]memBatch
	commits int
}

type memBatch struct {
	id      int64
	queryID string
	end     Offset
	pairs   []pair
}

func newMemSink() *memSink { return &memSink{batches: map[string][]memBatch{}} }

func (s *memSink) Commit(ctx context.Context, b Batch, rows []arrow.RecordBatch) (SinkResult, error) {
	if err := ctx.Err(); err != nil {
		return SinkResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	bs := s.batches[b.Query]
	if len(bs) > 0 && bs[len(bs)-1].id >= b.ID {
		return SinkResult{Committed: false}, nil
	}
	ps := pairsOf(rows)
	s.batches[b.Query] = append(bs, memBatch{id: b.ID, queryID: b.QueryID, end: b.End, pairs: ps})
	s.commits++
	return SinkResult{Committed: true, SnapshotID: int64(s.commits), Rows: int64(len(ps))}, nil
}

func (s *memSink) LastCommitted(ctx context.Context, query string) (Marker, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bs := s.batches[query]
	if len(bs) == 0 {
		return Marker{}, false, nil
	}
	l := bs[len(bs)-1]
	return Marker{Batch: l.id, End: l.end, QueryID: l.queryID}, true, nil
}

func (s *memSink) pairs(query string) []pair {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []pair
	for _, b := range s.batches[query] {
		out = append(out, b.pairs...)
	}
	return out
}

// memProgress is an in-memory ProgressSink.
type memProgress struct {
	mu   sync.Mutex
	rows map[string][]Progress
}

func (m *memProgress) WriteProgress(ctx context.Context, query string, rows []Progress) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows == nil {
		m.rows = map[string][]Progress{}
	}
	have := m.rows[query]
	for _, r := range rows {
		if len(have) > 0 && have[len(have)-1].Batch >= r.Batch {
			continue
		}
		have = append(have, r)
	}
	m.rows[query] = have
	return nil
}

func (m *memProgress) LastProgress(ctx context.Context, query string) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.rows[query]
	if len(rs) == 0 {
		return 0, false, nil
	}
	return rs[len(rs)-1].Batch, true, nil
}

func sortedBatches(rows []Progress) []int64 {
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r.Batch)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

var errCrash = errors.New("simulated crash")

func openBrokerNoCreate(t testing.TB, path string) *broker.DB {
	t.Helper()
	db, err := broker.Open(path, broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// storedBytes returns the key+value bytes the test topic holds.
func storedBytes(t testing.TB, log broker.Log) int64 {
	t.Helper()
	var n int64
	for _, p := range testPartitions(t, log) {
		n += p.Bytes
	}
	return n
}
