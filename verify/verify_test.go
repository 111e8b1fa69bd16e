package verify

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"lakehouse/broker"
	"lakehouse/internal/progress"
	"lakehouse/table"
)

// buildRecord makes a record of schema s with one row per element of rows;
// columns missing from a row get a plain non-null value.
func buildRecord(t *testing.T, s *arrow.Schema, rows []map[string]any) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	now := time.Now()
	for _, row := range rows {
		for i, f := range s.Fields() {
			v, ok := row[f.Name]
			switch fb := b.Field(i).(type) {
			case *array.StringBuilder:
				if !ok {
					v = "x"
				}
				fb.Append(v.(string))
			case *array.Int32Builder:
				if !ok {
					v = int32(0)
				}
				fb.Append(v.(int32))
			case *array.Int64Builder:
				if !ok {
					v = int64(0)
				}
				fb.Append(v.(int64))
			case *array.BooleanBuilder:
				if !ok {
					v = false
				}
				fb.Append(v.(bool))
			case *array.TimestampBuilder:
				if !ok {
					v = now
				}
				ts, err := arrow.TimestampFromTime(v.(time.Time), f.Type.(*arrow.TimestampType).Unit)
				if err != nil {
					t.Fatal(err)
				}
				fb.Append(ts)
			default:
				t.Fatalf("column %s: unsupported builder %T", f.Name, fb)
			}
		}
	}
	return b.NewRecordBatch()
}

// lakeFixture is a broker with n messages per partition plus a lake; the
// test decides what bronze and silver hold.
type lakeFixture struct {
	db   *broker.DB
	lake *table.Lake
	n    int
	next int64 // next bronze batch id
}

func newFixture(t *testing.T, partitions, n int) *lakeFixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := broker.Open(filepath.Join(dir, "broker.db"), broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.CreateTopic(ctx, DefaultTopic, partitions); err != nil {
		t.Fatal(err)
	}
	var recs []broker.Record
	for p := 0; p < partitions; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, broker.Record{Topic: DefaultTopic, Partition: p, Value: []byte(fmt.Sprintf(`{"p":%d,"i":%d}`, p, i))})
		}
	}
	if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
		t.Fatal(err)
	}
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lake.Close() })
	if err := lake.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	return &lakeFixture{db: db, lake: lake, n: n}
}

func (f *lakeFixture) bronze(t *testing.T, pairs [][2]int64) {
	t.Helper()
	rows := make([]map[string]any, len(pairs))
	for i, p := range pairs {
		rows[i] = map[string]any{"broker_partition": int32(p[0]), "broker_offset": p[1]}
	}
	f.commit(t, table.Bronze, "bronze", buildRecord(t, table.BronzeSchema, rows))
}

func (f *lakeFixture) silver(t *testing.T, ids ...string) {
	t.Helper()
	rows := make([]map[string]any, len(ids))
	for i, id := range ids {
		rows[i] = map[string]any{"event_id": id}
	}
	f.commit(t, table.SilverEdits, "silver", buildRecord(t, table.SilverEditsSchema, rows))
}

func (f *lakeFixture) commit(t *testing.T, ident, query string, rec arrow.RecordBatch) {
	t.Helper()
	defer rec.Release()
	f.next++
	if _, err := f.lake.CommitBatch(context.Background(), ident, table.Batch{Query: query, ID: f.next, Offsets: "test", Records: []arrow.RecordBatch{rec}}); err != nil {
		t.Fatal(err)
	}
}

// allOffsets is every (partition, offset) the fixture's broker holds.
func (f *lakeFixture) allOffsets(partitions int) [][2]int64 {
	var out [][2]int64
	for p := 0; p < partitions; p++ {
		for i := 0; i < f.n; i++ {
			out = append(out, [2]int64{int64(p), int64(i)})
		}
	}
	return out
}

func failedNames(r Report) string { return strings.Join(r.FailedNames(), ",") }

func TestVerifyPassesOnACorrectLake(t *testing.T) {
	f := newFixture(t, 2, 10)
	f.bronze(t, f.allOffsets(2)[:7])
	f.bronze(t, f.allOffsets(2)[7:])
	f.silver(t, "a", "b")
	f.silver(t, "c")
	var shown strings.Builder
	r, err := Run(context.Background(), f.db, f.lake, Expect{Messages: 20, Silver: 3, DLQ: 0, LateIDs: []string{"late-1"}}, progress.Display{W: &shown})
	if err != nil {
		t.Fatalf("Run: %v\n%+v", err, r.Checks)
	}
	if r.Counts.Bronze != 20 || r.Counts.BronzeDistinct != 20 || r.Counts.Silver != 3 || r.Counts.BronzeCommits != 2 {
		t.Fatalf("counts: got %s", r.CountsJSON())
	}
	if shown.Len() > 0 { // a verify of less than progressDelay shows no progress
		t.Errorf("a quick verify showed progress: %q", shown.String())
	}
}

// Each case breaks one invariant on purpose; the named check must fail.
func TestVerifyFailsOnBrokenLakes(t *testing.T) {
	cases := []struct {
		name      string
		build     func(t *testing.T, f *lakeFixture)
		exp       Expect
		wantCheck string
		wantInMsg string
	}{
		{"duplicated offset", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.bronze(t, [][2]int64{{1, 4}})
			f.silver(t, "a")
		}, NoExpectations(), "bronze-offsets", "partition 1: 0 missing [], 1 duplicated [4]"},
		{"missing offset", func(t *testing.T, f *lakeFixture) {
			all := f.allOffsets(2)
			f.bronze(t, append(all[:3:3], all[4:]...)) // drops partition 0 offset 3
			f.silver(t, "a")
		}, NoExpectations(), "bronze-offsets", "partition 0: 1 missing [3]"},
		{"offset beyond the broker's end", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, append(f.allOffsets(2), [2]int64{0, 99}))
			f.silver(t, "a")
		}, NoExpectations(), "bronze-offsets", "beyond end [99]"},
		{"duplicated event id", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.silver(t, "a", "b")
			f.silver(t, "b")
		}, NoExpectations(), "silver-unique", "duplicated ids [b]"},
		{"late event in silver", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.silver(t, "a", "late-1")
		}, Expect{Messages: -1, Silver: -1, DLQ: -1, LateIDs: []string{"late-1", "late-2"}}, "late-not-in-silver", "1 of 2 late events in silver [late-1]"},
		{"silver short of expected", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.silver(t, "a")
		}, Expect{Messages: 20, Silver: 2, DLQ: -1}, "silver-events", "expected 2"},
		{"topic short of expected", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.silver(t, "a")
		}, Expect{Messages: 21, Silver: -1, DLQ: -1}, "topic-messages", "broker 20, expected 21"},
		{"violations missing from the DLQ", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.silver(t, "a")
		}, Expect{Messages: -1, Silver: -1, DLQ: 25}, "dlq", "dead-letter topic 0, expected 25"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 2, 10)
			tc.build(t, f)
			r, err := Run(context.Background(), f.db, f.lake, tc.exp, progress.Display{})
			if !errors.Is(err, ErrFailed) {
				t.Fatalf("Run: got %v, want ErrFailed; checks %+v", err, r.Checks)
			}
			if got := failedNames(r); got != tc.wantCheck {
				t.Fatalf("failed checks: got %q, want %q (%+v)", got, tc.wantCheck, r.Checks)
			}
			for _, c := range r.Failed() {
				if !strings.Contains(c.Detail, tc.wantInMsg) {
					t.Fatalf("detail %q does not contain %q", c.Detail, tc.wantInMsg)
				}
			}
		})
	}
}

func TestStatusDrained(t *testing.T) {
	st := Status{Topics: map[string]int64{DefaultTopic: 10}, Queries: map[string]QueryStatus{
		"bronze": {Batch: 3, Lag: 0}, "silver": {Batch: 2, Lag: 0},
	}}
	if !st.Drained(DefaultTopic, 10) {
		t.Fatal("all queries at lag 0 with every message: want drained")
	}
	if st.Drained(DefaultTopic, 11) {
		t.Fatal("topic short of want: want not drained")
	}
	st.Queries["silver"] = QueryStatus{Batch: 2, Lag: 5}
	if st.Drained(DefaultTopic, 10) {
		t.Fatal("silver lagging: want not drained")
	}
	st.Queries["silver"] = QueryStatus{Error: "boom"}
	if st.Drained(DefaultTopic, 10) {
		t.Fatal("a query in error: want not drained")
	}
	if (Status{Topics: map[string]int64{DefaultTopic: 10}}).Drained(DefaultTopic, 10) {
		t.Fatal("no queries: want not drained")
	}
	if got := (Status{Queries: map[string]QueryStatus{"b": {Batch: 1, Lag: 2}, "a": {Batch: 0}}}).Lags(); got != "a batch 0 lag 0, b batch 1 lag 2" {
		t.Fatalf("Lags: got %q", got)
	}
}
