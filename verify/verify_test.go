package verify

import (
	"context"
	"encoding/json"
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
	"lakehouse/internal/fault"
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
// test decides what bronze and silver hold. Bronze rows hold edit events
// with the id idOf(partition, offset) (or the value a test gives), and
// markers as the real queries write them: bronze's end offsets, silver's
// bronze snapshot.
type lakeFixture struct {
	db   *broker.DB
	lake *table.Lake
	n    int
	next int64 // next batch id

	base       time.Time     // event time of the fixture's edits
	bronzeEnds map[int]int64 // bronze's marker so far
	bronzeSnap int64         // bronze's last snapshot: what silver's marker names
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
	f := &lakeFixture{db: db, n: n, base: time.Now().Add(-time.Hour).Truncate(time.Second), bronzeEnds: map[int]int64{}}
	f.publish(t, partitions, n)
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lake.Close() })
	if err := lake.EnsureTables(ctx); err != nil {
		t.Fatal(err)
	}
	f.lake = lake
	return f
}

// publish appends n messages to each of the first partitions of the broker.
func (f *lakeFixture) publish(t *testing.T, partitions, n int) {
	t.Helper()
	var recs []broker.Record
	for p := 0; p < partitions; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, broker.Record{Topic: DefaultTopic, Partition: p, Value: []byte(fmt.Sprintf(`{"p":%d,"i":%d}`, p, i))})
		}
	}
	if _, err := f.db.Append(context.Background(), broker.Batch{Records: recs}); err != nil {
		t.Fatal(err)
	}
}

// idOf is the event id of the fixture's edit at (partition, offset).
func idOf(p, off int64) string { return fmt.Sprintf("p%d-o%d", p, off) }

// editJSON is an edit event silver keeps, with event time (and meta.dt) at.
func editJSON(id string, at time.Time) string {
	return fmt.Sprintf(`{"meta":{"id":%q,"dt":%q},"type":"edit","namespace":0,"title":"T","timestamp":%d,`+
		`"user":"u","bot":false,"length":{"new":1},"revision":{"new":1},"server_name":"x.org","wiki":"xwiki"}`,
		id, at.UTC().Format(time.RFC3339), at.Unix())
}

// bronze commits one bronze batch of the fixture's edits at pairs.
func (f *lakeFixture) bronze(t *testing.T, pairs [][2]int64) {
	t.Helper()
	values := make([]string, len(pairs))
	for i, p := range pairs {
		values[i] = editJSON(idOf(p[0], p[1]), f.base)
	}
	f.bronzeValues(t, pairs, values)
}

// bronzeValues commits one bronze batch with the given values at pairs.
func (f *lakeFixture) bronzeValues(t *testing.T, pairs [][2]int64, values []string) {
	t.Helper()
	ingest := f.base.Add(time.Duration(f.next+1) * time.Second) // one ingest_ts per batch, increasing
	rows := make([]map[string]any, len(pairs))
	for i, p := range pairs {
		rows[i] = map[string]any{"broker_partition": int32(p[0]), "broker_offset": p[1], "value": values[i], "ingest_ts": ingest}
		f.bronzeEnds[int(p[0])] = max(f.bronzeEnds[int(p[0])], p[1]+1)
	}
	ends, err := json.Marshal(f.bronzeEnds)
	if err != nil {
		t.Fatal(err)
	}
	f.bronzeSnap = f.commit(t, table.Bronze, "bronze", string(ends), buildRecord(t, table.BronzeSchema, rows))
}

// silver commits one silver batch of ids, its marker at bronze's last
// snapshot (silver has read all of bronze).
func (f *lakeFixture) silver(t *testing.T, ids ...string) {
	t.Helper()
	rows := make([]map[string]any, len(ids))
	for i, id := range ids {
		rows[i] = map[string]any{"event_id": id}
	}
	f.commit(t, table.SilverEdits, "silver", fmt.Sprintf(`{"snapshot":%d}`, f.bronzeSnap), buildRecord(t, table.SilverEditsSchema, rows))
}

func (f *lakeFixture) commit(t *testing.T, ident, query, offsets string, rec arrow.RecordBatch) int64 {
	t.Helper()
	defer rec.Release()
	f.next++
	res, err := f.lake.CommitBatch(context.Background(), ident, table.Batch{Query: query, ID: f.next, Offsets: offsets, Records: []arrow.RecordBatch{rec}})
	if err != nil {
		t.Fatal(err)
	}
	return res.SnapshotID
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

// ids are the fixture's event ids at pairs.
func ids(pairs [][2]int64) []string {
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = idOf(p[0], p[1])
	}
	return out
}

func failedNames(r Report) string { return strings.Join(r.FailedNames(), ",") }

func TestVerifyPassesOnACorrectLake(t *testing.T) {
	f := newFixture(t, 2, 10)
	all := f.allOffsets(2)
	f.bronze(t, all[:7])
	f.bronze(t, all[7:])
	// A third batch: an edit older than the watermark (late, not expected
	// in silver) and one older than the newest but within the delay.
	f.publish(t, 1, 2)
	f.bronzeValues(t, [][2]int64{{0, 10}, {0, 11}}, []string{
		editJSON("late-1", f.base.Add(-DefaultWatermarkDelay-time.Second)), editJSON("slow-1", f.base.Add(-DefaultWatermarkDelay))})
	f.silver(t, ids(all[:12])...)
	f.silver(t, append(ids(all[12:]), "slow-1")...)
	var shown strings.Builder
	r, err := Run(context.Background(), f.db, f.lake, Expect{Messages: 22, Silver: 21, DLQ: 0, LateIDs: []string{"late-1"}}, progress.Display{W: &shown})
	if err != nil {
		t.Fatalf("Run: %v\n%+v", err, r.Checks)
	}
	c := r.Counts
	if c.Bronze != 22 || c.BronzeDistinct != 22 || c.Silver != 21 || c.BronzeCommits != 3 ||
		c.SilverExpected != 21 || c.SilverMissing != 0 || c.SilverExtra != 0 || c.Pending != 0 || c.SilverPending != 0 {
		t.Fatalf("counts: got %s", r.CountsJSON())
	}
	if shown.Len() > 0 { // a verify of less than progressDelay shows no progress
		t.Errorf("a quick verify showed progress: %q", shown.String())
	}
}

// TestVerifyCountsTrimmedMessages: after broker retention trimmed part of
// what bronze landed, the broker's count check adds the trimmed messages to
// those it holds (an appliance that ran longer than its retention still
// verifies), and a count short of the expectation still fails.
func TestVerifyCountsTrimmedMessages(t *testing.T) {
	f := newFixture(t, 2, 10)
	all := f.allOffsets(2)
	f.bronze(t, all)
	f.silver(t, ids(all)...)
	trimmed, err := f.db.Retain(context.Background(), DefaultTopic, broker.Retention{MaxBytes: 1, Floor: []int64{6, 3}})
	if err != nil || trimmed != 9 {
		t.Fatalf("retention trimmed %d records (%v), want 9 (6 and 3)", trimmed, err)
	}
	r, err := Run(context.Background(), f.db, f.lake, Expect{Messages: 20, Silver: 20, DLQ: 0}, progress.Display{})
	if err != nil {
		t.Fatalf("Run: %v\n%+v", err, r.Checks)
	}
	if c := r.Counts; c.Broker != 11 || c.BrokerTrimmed != 9 {
		t.Fatalf("counts: broker %d held, %d trimmed; want 11 and 9", c.Broker, c.BrokerTrimmed)
	}
	r, _ = Run(context.Background(), f.db, f.lake, Expect{Messages: 21, Silver: 20, DLQ: 0}, progress.Display{})
	if got := failedNames(r); got != "topic-messages" {
		t.Fatalf("expecting 21 messages of 20 stored: failed checks %q, want topic-messages", got)
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
			f.silver(t, ids(f.allOffsets(2))...)
		}, NoExpectations(), "bronze-offsets", "partition 1: 0 missing [], 1 duplicated [4]"},
		{"missing offset", func(t *testing.T, f *lakeFixture) {
			all := f.allOffsets(2)
			held := append(all[:3:3], all[4:]...) // drops partition 0 offset 3
			f.bronze(t, held)
			f.silver(t, ids(held)...)
		}, NoExpectations(), "bronze-offsets", "partition 0: 1 missing [3]"},
		{"offset beyond the broker's end", func(t *testing.T, f *lakeFixture) {
			held := append(f.allOffsets(2), [2]int64{0, 99})
			f.bronze(t, held)
			f.silver(t, ids(held)...)
		}, NoExpectations(), "bronze-offsets", "beyond end [99]"},
		{"duplicated event id", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.silver(t, ids(f.allOffsets(2))...)
			f.silver(t, idOf(0, 1))
		}, NoExpectations(), "silver-unique", "duplicated ids [p0-o1]"},
		{"silver lost a row", func(t *testing.T, f *lakeFixture) {
			all := f.allOffsets(2)
			f.bronze(t, all[:10])
			f.bronze(t, all[10:])
			f.silver(t, ids(append(all[:15:15], all[16:]...))...) // loses partition 1 offset 5
		}, NoExpectations(), "silver-complete", "1 missing [p1-o5]"},
		{"silver row bronze does not have", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.silver(t, append(ids(f.allOffsets(2)), "ghost-1")...)
		}, NoExpectations(), "silver-complete", "1 extra (no edit/new event of bronze) [ghost-1]"},
		{"late event in silver", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.publish(t, 1, 1) // partition 0 offset 10
			// A later batch brings an edit older than the watermark: not
			// expected in silver, and here silver wrongly holds it.
			f.bronzeValues(t, [][2]int64{{0, 10}}, []string{editJSON("late-1", f.base.Add(-time.Hour))})
			f.silver(t, append(ids(f.allOffsets(2)), "late-1")...)
		}, Expect{Messages: -1, Silver: -1, DLQ: -1, AllowPending: true, LateIDs: []string{"late-1", "late-2"}}, "late-not-in-silver", "1 of 2 late events in silver [late-1]"},
		{"silver short of expected", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.silver(t, ids(f.allOffsets(2))...)
		}, Expect{Messages: 20, Silver: 21, DLQ: -1}, "silver-events", "expected 21"},
		{"topic short of expected", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.silver(t, ids(f.allOffsets(2))...)
		}, Expect{Messages: 21, Silver: -1, DLQ: -1}, "topic-messages", "broker 20, expected 21"},
		{"violations missing from the DLQ", func(t *testing.T, f *lakeFixture) {
			f.bronze(t, f.allOffsets(2))
			f.silver(t, ids(f.allOffsets(2))...)
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

// TestVerifyPendingIsNotMissing: right after a clean stop the broker holds
// messages bronze has not read, and bronze holds a batch silver has not
// read. The CLI's verify (NoExpectations) reports them pending and passes;
// prove's expectations (a drained pipeline) fail on the same lake.
func TestVerifyPendingIsNotMissing(t *testing.T) {
	f := newFixture(t, 2, 10)
	var first, second [][2]int64
	for p := int64(0); p < 2; p++ {
		for off := int64(0); off < 8; off++ {
			if off < 5 {
				first = append(first, [2]int64{p, off})
			} else {
				second = append(second, [2]int64{p, off})
			}
		}
	}
	f.bronze(t, first)
	f.silver(t, ids(first)...) // silver's marker: bronze's first snapshot
	f.bronze(t, second)        // offsets 5-7 of each partition, not read by silver
	// offsets 8 and 9 of each partition: in the broker, not read by bronze

	r, err := Run(context.Background(), f.db, f.lake, NoExpectations(), progress.Display{})
	if err != nil {
		t.Fatalf("Run: %v\n%+v", err, r.Checks)
	}
	c := r.Counts
	if c.Pending != 4 || c.SilverPending != 6 || c.SilverExpected != 10 || c.SilverMissing != 0 {
		t.Fatalf("counts: got pending %d, silver pending %d, expected %d, missing %d; want 4, 6, 10, 0 (%s)",
			c.Pending, c.SilverPending, c.SilverExpected, c.SilverMissing, r.CountsJSON())
	}
	for _, p := range c.Partitions {
		if p.Pending != 2 || p.MissingCount != 0 {
			t.Errorf("partition %d: got %d pending, %d missing; want 2, 0", p.Partition, p.Pending, p.MissingCount)
		}
	}
	for _, ch := range r.Checks {
		want := map[string]string{"bronze-offsets": "4 pending", "silver-complete": "6 pending"}[ch.Name]
		if want != "" && !strings.Contains(ch.Detail, want) {
			t.Errorf("%s: detail %q does not say %q", ch.Name, ch.Detail, want)
		}
	}

	strict := Expect{Messages: 20, Silver: -1, DLQ: -1}
	r, err = Run(context.Background(), f.db, f.lake, strict, progress.Display{})
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("strict Run: got %v, want ErrFailed; checks %+v", err, r.Checks)
	}
	if got, want := failedNames(r), "bronze-offsets,silver-complete"; got != want {
		t.Fatalf("strict: failed checks: got %q, want %q (%+v)", got, want, r.Checks)
	}
}

// TestVerifyBesideACommittingAppliance: beside a running appliance, bronze
// and silver commit while verify reads. A silver batch that lands between
// verify's read of silver's position and of silver's rows (hook
// verify.between-silver-reads), and bronze offsets committed after verify
// read the broker's ends, are after verify's cut: nothing is missing,
// nothing is beyond the topic, and what silver has not read is pending.
func TestVerifyBesideACommittingAppliance(t *testing.T) {
	f := newFixture(t, 1, 10)
	var first, second [][2]int64
	for off := int64(0); off < 10; off++ {
		if off < 5 {
			first = append(first, [2]int64{0, off})
		} else {
			second = append(second, [2]int64{0, off})
		}
	}
	f.bronze(t, first)
	f.silver(t, ids(first)...)
	hit := false
	fault.ArmFunc(hookBetweenSilverReads, 0, func(string) {
		hit = true
		f.bronze(t, second)         // bronze commits offsets 5-9
		f.silver(t, ids(second)...) // and silver reads them
	})
	t.Cleanup(fault.Disarm)
	r, err := Run(context.Background(), f.db, f.lake, NoExpectations(), progress.Display{})
	if !hit {
		t.Fatal("inconclusive: the hook between silver's reads was not reached")
	}
	if err != nil {
		t.Fatalf("Run: %v\n%+v", err, r.Checks)
	}
	if c := r.Counts; c.SilverMissing != 0 || c.SilverExpected != 5 || c.SilverPending != 5 {
		t.Fatalf("silver: got expected %d, missing %d, pending %d; want 5, 0, 5 (%s)", c.SilverExpected, c.SilverMissing, c.SilverPending, r.CountsJSON())
	}
}

// TestVerifyBronzeAheadOfTheBrokerRead: offsets appended to the broker and
// committed to bronze after verify read the broker's ends are not beyond
// the broker; an offset beyond its ends still is.
func TestVerifyBronzeAheadOfTheBrokerRead(t *testing.T) {
	f := newFixture(t, 1, 5)
	f.bronze(t, f.allOffsets(1))
	f.silver(t, ids(f.allOffsets(1))...)
	log := &growingLog{Log: f.db, f: f, t: t}
	r, err := Run(context.Background(), log, f.lake, NoExpectations(), progress.Display{})
	if log.reads < 2 {
		t.Fatalf("inconclusive: the broker's offsets were read %d times", log.reads)
	}
	if err != nil {
		t.Fatalf("Run: %v\n%+v", err, r.Checks)
	}
	if c := r.Counts; c.Bronze != 5 || c.BronzeDistinct != 5 || c.Broker != 5 {
		t.Fatalf("got bronze %d (%d distinct), broker %d; want the 5 of verify's cut (%s)", c.Bronze, c.BronzeDistinct, c.Broker, r.CountsJSON())
	}

	// Offset 20 was never appended: beyond the broker whenever it is read.
	f.bronze(t, [][2]int64{{0, 20}})
	r, err = Run(context.Background(), f.db, f.lake, NoExpectations(), progress.Display{})
	if !errors.Is(err, ErrFailed) || failedNames(r) != "bronze-offsets" {
		t.Fatalf("an offset beyond the broker: got %v, failed %q; want bronze-offsets (%+v)", err, failedNames(r), r.Checks)
	}
}

// growingLog appends five records and commits them to bronze right after
// its first Offsets of the main topic returns: the broker and bronze move
// between verify's reads.
type growingLog struct {
	broker.Log
	f     *lakeFixture
	t     *testing.T
	reads int
}

func (g *growingLog) Offsets(ctx context.Context, topic string) ([]broker.PartitionOffsets, error) {
	offs, err := g.Log.Offsets(ctx, topic)
	if topic != DefaultTopic || err != nil {
		return offs, err
	}
	g.reads++
	if g.reads == 1 {
		g.f.publish(g.t, 1, 5) // offsets 5-9
		var pairs [][2]int64
		for off := int64(5); off < 10; off++ {
			pairs = append(pairs, [2]int64{0, off})
		}
		g.f.bronze(g.t, pairs)
	}
	return offs, err
}
