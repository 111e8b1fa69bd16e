package silver

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/internal/crashtest"
	"lakehouse/stream"
	"lakehouse/stream/lakeio"
	"lakehouse/stream/silver/silvertest"
	"lakehouse/table"
)

// envKillSoak, set, adds random kills to TestSilverKill.
const envKillSoak = "LAKEHOUSE_SILVER_SOAK"

const (
	killSnapshots = 40 // bronze snapshots before the two flusher snapshots
	killPerSnap   = 25
	// killRetain is the checkpoint entries kept: purges run during the test.
	// It must exceed the batches the hooked children commit in total: they
	// never flush progress rows, and the runner purges commit entries (and
	// with them unflushed progress rows) regardless.
	killRetain = 30
	killChain  = 3 // state deltas between full snapshots
)

func killConfig(dir string) (stream.Config, Config) {
	return stream.Config{DataDir: dir, MaxOffsetsPerTrigger: 1, Trigger: -1, RetainBatches: killRetain,
			ProgressEvery: 3, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))},
		Config{MaxDeltaChain: killChain}
}

// TestMain runs silverKillChild instead of the tests in the kill test's
// child process (crashtest role "kill").
func TestMain(m *testing.M) {
	os.Exit(crashtest.Main(m, map[string]crashtest.Role{"kill": silverKillChild}))
}

// silverKillChild is the child's body: silver drains bronze until done or
// killed (by an armed hook or by the parent).
func silverKillChild(s crashtest.Spec) error {
	dir := s.Get("dir")
	ctx := context.Background()
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer lake.Close()
	cfg, scfg := killConfig(dir)
	if s.Get("hook") != "" {
		// Progress flushes commit through the table's hooks too: keep them
		// out of the way so the armed hook fires in a silver batch.
		cfg.ProgressEvery, cfg.ProgressInterval = 1<<30, time.Hour
	}
	s.Arm()
	q, _, err := NewQuery(lake, cfg, scfg)
	if err != nil {
		return err
	}
	return q.Drain(ctx)
}

type killRound struct {
	hook string // "" = random SIGKILL after a few batches
	skip int
}

// TestSilverKill kills the silver query at every crash point of the batch
// protocol and at random, then checks that silver holds every unique
// on-time edit/new event of the scenario exactly once.
func TestSilverKill(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	sc := silvertest.Generate(7, killSnapshots, killPerSnap, DefaultWatermarkDelay)
	setupBronze(t, dir, sc)
	lastBatch := int64(len(sc.Snapshots) - 1)

	rounds := []killRound{
		{"stream.after-offset-entry", 2},
		{"silver.state-encoded", 1},
		{"stream.after-state-save", 1},
		{"table.after-data-files", 1},
		{"table.after-commit", 1},
		{"stream.after-commit-entry", 2},
		{"table.after-data-files", 4}, // lands on a full state snapshot or a delta
		{"", 0},
		{"", 0},
	}
	if os.Getenv(envKillSoak) != "" {
		for i := 0; i < 10; i++ {
			rounds = append(rounds, killRound{})
		}
	}
	for i, r := range rounds {
		name := r.hook
		if name == "" {
			name = "random"
		}
		t.Run(fmt.Sprintf("%d-%s", i, name), func(t *testing.T) {
			killOnce(t, dir, r, lastBatch)
			checkNoDuplicates(t, dir, sc)
		})
		if t.Failed() {
			return
		}
	}

	// Restart without faults and drain.
	lake := silvertest.OpenLake(t, dir)
	defer lake.Close()
	cfg, scfg := killConfig(dir)
	cfg.Logger = slog.New(slog.DiscardHandler)
	q, _, err := NewQuery(lake, cfg, scfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	VerifyScenario(t, lake, dir, sc)
}

func setupBronze(t *testing.T, dir string, sc silvertest.Scenario) {
	t.Helper()
	lake := silvertest.OpenLake(t, dir)
	defer lake.Close()
	if err := sc.CommitBronze(context.Background(), lake); err != nil {
		t.Fatal(err)
	}
}

// killOnce runs one child and kills it (silvertest.KillOnce).
func killOnce(t *testing.T, dir string, r killRound, lastBatch int64) {
	silvertest.KillOnce(t, silvertest.Kill{
		Dir: dir, Table: table.SilverEdits, Query: QueryName,
		Role: "kill", Hook: r.hook,
		Skip:      func(int64) int { return r.skip },
		LastBatch: lastBatch, Seed: 1,
	})
}

// silverIDs scans silver.edits and returns its event ids.
func silverIDs(t testing.TB, lake *table.Lake) []string {
	t.Helper()
	recs, err := lake.Scan(context.Background(), table.SilverEdits)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		col := r.Column(r.Schema().FieldIndices("event_id")[0]).(*array.String)
		for i := 0; i < col.Len(); i++ {
			ids = append(ids, col.Value(i))
		}
		r.Release()
	}
	return ids
}

// checkNoDuplicates checks, after a kill, that silver holds no id twice
// and only ids the scenario expects.
func checkNoDuplicates(t *testing.T, dir string, sc silvertest.Scenario) {
	t.Helper()
	lake := silvertest.OpenLake(t, dir)
	defer lake.Close()
	want := sc.Expected()
	seen := map[string]bool{}
	for _, id := range silverIDs(t, lake) {
		if seen[id] {
			t.Errorf("after kill: event %s twice in silver", id)
		}
		if _, ok := want[id]; !ok {
			t.Errorf("after kill: event %s in silver but not an on-time unique edit", id)
		}
		seen[id] = true
	}
}

// VerifyScenario checks silver after the scenario was fully processed:
// rows == distinct ids == the scenario's unique on-time edit/new events;
// one snapshot per batch whose summaries add up to the scenario's late and
// duplicate counts; progress rows likewise; and the last snapshot's state
// version and watermark match the checkpoint.
func VerifyScenario(t *testing.T, lake *table.Lake, dir string, sc silvertest.Scenario) {
	t.Helper()
	ctx := context.Background()
	want := sc.Expected()
	ids := silverIDs(t, lake)
	distinct := map[string]bool{}
	for _, id := range ids {
		distinct[id] = true
		if _, ok := want[id]; !ok {
			t.Errorf("event %s in silver but not expected", id)
		}
	}
	if len(ids) != len(distinct) || len(distinct) != len(want) {
		t.Errorf("silver rows %d, distinct ids %d, want both %d (unique on-time edit/new events of the scenario)",
			len(ids), len(distinct), len(want))
	}

	snaps, err := lake.AppendsAfter(ctx, table.SilverEdits, 0)
	if err != nil {
		t.Fatal(err)
	}
	var late, dups, bad int64
	batches := map[string]int{}
	var last table.Snapshot
	for _, s := range snaps {
		if s.Summary[table.SummaryQuery] != QueryName {
			continue
		}
		batches[s.Summary[table.SummaryBatchID]]++
		st, _, ok := lakeio.StatsFromSummary(s.Summary)
		if !ok {
			t.Errorf("snapshot %d has no stats in its summary", s.ID)
		}
		late, dups, bad = late+st.DroppedByWatermark, dups+st.Duplicates, bad+st.Unparseable
		last = s
	}
	if got, want := len(batches), len(sc.Snapshots); got != want {
		t.Errorf("silver batches: got %d, want %d (one per bronze snapshot)", got, want)
	}
	for b, n := range batches {
		if n != 1 {
			t.Errorf("silver batch %s committed %d times", b, n)
		}
	}
	if late != int64(sc.Count(silvertest.Late)) || dups != int64(sc.Count(silvertest.Resend)) || bad != 0 {
		t.Errorf("summaries: late %d, duplicates %d, unparseable %d; want %d, %d, 0",
			late, dups, bad, sc.Count(silvertest.Late), sc.Count(silvertest.Resend))
	}

	// State and table against each other: the last snapshot names the state
	// version it produced and the watermark its batch used.
	st, version, _ := lakeio.StatsFromSummary(last.Summary)
	cp, err := stream.OpenCheckpoint(stream.CheckpointPath(dir, QueryName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.LoadState(version); err != nil {
		t.Errorf("state version %d named by the last snapshot: %v", version, err)
	}
	if e, err := cp.Offsets(version); err != nil {
		t.Errorf("offset entry %d: %v", version, err)
	} else if m, err := ParseMeta(e.Meta); err != nil || !m.Watermark.Equal(st.Watermark) {
		t.Errorf("watermark: snapshot says %v, offset entry %d says %v (%v)", st.Watermark, version, m.Watermark, err)
	}

	checkProgress(t, lake, int64(len(sc.Snapshots)), late, dups)
}

// checkProgress checks that ops.stream_progress has one row per silver batch
// and that its counters add up.
func checkProgress(t *testing.T, lake *table.Lake, batches, late, dups int64) {
	t.Helper()
	recs, err := lake.Scan(context.Background(), table.StreamProgress)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	var gotLate, gotDups int64
	for _, r := range recs {
		col := func(n string) int { return r.Schema().FieldIndices(n)[0] }
		q := r.Column(col("query")).(*array.String)
		b := r.Column(col("batch_id")).(*array.Int64)
		l := r.Column(col("rows_dropped_by_watermark")).(*array.Int64)
		d := r.Column(col("duplicates_dropped")).(*array.Int64)
		for i := 0; i < q.Len(); i++ {
			if q.Value(i) != QueryName {
				continue
			}
			seen[b.Value(i)]++
			gotLate += l.Value(i)
			gotDups += d.Value(i)
		}
		r.Release()
	}
	if int64(len(seen)) != batches {
		t.Errorf("progress rows: got %d batches, want %d: %v", len(seen), batches, seen)
	}
	for b, n := range seen {
		if n != 1 {
			t.Errorf("progress row of batch %d stored %d times", b, n)
		}
	}
	if gotLate != late || gotDups != dups {
		t.Errorf("progress counters: late %d, duplicates %d; want %d, %d", gotLate, gotDups, late, dups)
	}
}
