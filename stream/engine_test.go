package stream

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/broker"
	"lakehouse/internal/fault"
)

func TestCheckpointLogs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cp")
	cp, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := cp.QueryID(); ok || err != nil {
		t.Fatalf("QueryID on new checkpoint: got ok=%v err=%v, want false, nil", ok, err)
	}
	if err := cp.SetQueryID("q1", "bronze"); err != nil {
		t.Fatal(err)
	}
	for b := int64(0); b < 12; b++ {
		if err := cp.WriteOffsets(OffsetEntry{Batch: b, Start: Offset(`{"0":1}`), End: Offset(`{"0":2}`), Meta: json.RawMessage(`{"wm":5}`)}); err != nil {
			t.Fatal(err)
		}
		if b < 11 {
			if err := cp.WriteCommit(CommitEntry{Batch: b, Progress: Progress{Batch: b, RowsIn: b}}); err != nil {
				t.Fatal(err)
			}
			if err := cp.SaveState(b, []byte{byte(b)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A temp file a crash left behind is removed on open.
	if err := os.WriteFile(filepath.Join(dir, "state", tempPrefix+"12-x"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	cp.Close()
	cp, err = OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", tempPrefix+"12-x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp file after open: got %v, want not exist", err)
	}
	id, ok, err := cp.QueryID()
	if err != nil || !ok || id != "q1" {
		t.Errorf("QueryID: got %q %v %v, want q1", id, ok, err)
	}
	lo, ok, err := cp.LatestOffsets()
	if err != nil || !ok || lo.Batch != 11 || string(lo.Meta) != `{"wm":5}` {
		t.Errorf("LatestOffsets: got %+v %v %v, want batch 11 with meta", lo, ok, err)
	}
	lc, ok, err := cp.LatestCommit()
	if err != nil || !ok || lc.Batch != 10 || lc.Progress.RowsIn != 10 {
		t.Errorf("LatestCommit: got %+v %v %v, want batch 10", lc, ok, err)
	}
	if err := cp.Purge(5); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		get  func() error
		want error
	}{
		{"purged offsets", func() error { _, err := cp.Offsets(4); return err }, ErrNoEntry},
		{"kept offsets", func() error { _, err := cp.Offsets(5); return err }, nil},
		{"purged commit", func() error { _, err := cp.Commit(4); return err }, ErrNoEntry},
		{"kept state", func() error { _, err := cp.LoadState(5); return err }, nil},
		{"purged state", func() error { _, err := cp.LoadState(4); return err }, ErrNoEntry},
		{"missing commit", func() error { _, err := cp.Commit(11); return err }, ErrNoEntry},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.get(); !errors.Is(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	after, err := cp.CommitsAfter(7)
	if err != nil || len(after) != 3 || after[0].Batch != 8 {
		t.Errorf("CommitsAfter(7): got %d entries (%v), want 8..10", len(after), err)
	}
	// A corrupt entry is reported, not skipped.
	cp.Close()
	log, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	log[len(log)/2] ^= 0xFF
	if err := os.WriteFile(filepath.Join(dir, "log"), log, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cp.LatestCommit(); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Errorf("corrupt commit: got %v, want ErrCorruptCheckpoint", err)
	}
}

func TestBrokerSourcePlan(t *testing.T) {
	db := openBroker(t, filepath.Join(t.TempDir(), "broker.db"), 4)
	defer db.Close()
	fill(t, db, 1000, 250)
	ends := endOffsets(t, db)
	src := NewBrokerSource(db, testTopic, testSchema)
	ctx := ctxT(t, 30*time.Second)
	earliest, err := src.Earliest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		start Offset
		max   int64
		wantN int64
	}{
		{"all fits", earliest, 5000, 1000},
		{"capped", earliest, 97, 97},
		{"cap of one", earliest, 1, 1},
		{"nothing new", NextOffsets(ends).Offset(), 100, 0},
		{"missing partitions start at Start", Offset(`{}`), 10, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			end, n, err := src.Plan(ctx, tc.start, Limit{Units: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.wantN {
				t.Errorf("n: got %d, want %d", n, tc.wantN)
			}
			from, _ := ParsePartitionOffsets(tc.start)
			to, _ := ParsePartitionOffsets(end)
			if got := to.Sum() - from.Sum(); got != tc.wantN {
				t.Errorf("end-start: got %d, want %d", got, tc.wantN)
			}
			for p, e := range to {
				if e > ends[p] || e < from[p] {
					t.Errorf("partition %d: end %d outside [%d, %d]", p, e, from[p], ends[p])
				}
			}
			if n > 0 {
				recs, _, err := src.Read(ctx, tc.start, end)
				if err != nil {
					t.Fatal(err)
				}
				if got := countRows(recs); got != n {
					t.Errorf("rows read: got %d, want %d", got, n)
				}
				release(recs)
			}
		})
	}
	t.Run("beyond end", func(t *testing.T) {
		_, _, err := src.Plan(ctx, NextOffsets{0: ends[0] + 1}.Offset(), Limit{Units: 10})
		if !errors.Is(err, ErrSourceBehind) {
			t.Errorf("got %v, want ErrSourceBehind", err)
		}
	})
}

// plainLog hides the broker's Sizer: BrokerSource must then read the
// records to learn their sizes.
type plainLog struct{ broker.Log }

// TestBrokerSourcePlanBytes: a backlog whose records total more than the
// byte cap is split into batches of whole records within the cap (the
// first record alone when it is larger), shared between partitions in the
// proportions of the offset cap, whether the log tells sizes (Sizer) or
// they are read.
func TestBrokerSourcePlanBytes(t *testing.T) {
	db := openBroker(t, filepath.Join(t.TempDir(), "broker.db"), 4)
	defer db.Close()
	ctx := ctxT(t, 30*time.Second)
	// 400 records of 1,000 to 4,990 bytes (value plus a 4-byte key), keys
	// spread over the 4 partitions, then one of 50 KB.
	var recs []broker.Record
	var total int64
	for i := range 400 {
		v := bytes.Repeat([]byte("v"), 996+(i%5)*1000)
		recs = append(recs, broker.Record{Topic: testTopic, Partition: i % 4, Key: []byte(fmt.Sprintf("%04d", i)), Value: v})
		total += int64(len(v) + 4)
	}
	recs = append(recs, broker.Record{Topic: testTopic, Partition: 1, Key: []byte("big!"), Value: bytes.Repeat([]byte("b"), 50_000)})
	if _, err := db.Append(ctx, broker.Batch{Records: recs}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		log  broker.Log
	}{{"sizer", db}, {"read", plainLog{db}}} {
		t.Run(tc.name, func(t *testing.T) {
			src := NewBrokerSource(tc.log, testTopic, testSchema)
			start, err := src.Earliest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			const capBytes = 100_000
			var batches, records int64
			var sum int64
			for {
				end, n, err := src.Plan(ctx, start, Limit{Units: 1000, Bytes: capBytes})
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				recs, size, err := src.Read(ctx, start, end)
				if err != nil {
					t.Fatal(err)
				}
				if got := countRows(recs); got != n {
					t.Errorf("batch %d: read %d rows, planned %d", batches, got, n)
				}
				release(recs)
				if size > capBytes && n > 1 {
					t.Errorf("batch %d: %d records of %d bytes, cap %d", batches, n, size, capBytes)
				}
				if n == 1 && size > capBytes && size != 50_004 {
					t.Errorf("batch %d: a single record of %d bytes over the cap, want only the 50 KB one", batches, size)
				}
				from, _ := ParsePartitionOffsets(start)
				to, _ := ParsePartitionOffsets(end)
				if batches == 0 {
					// The first batch is a cut of an even backlog: each
					// partition gives about a quarter.
					for p := range 4 {
						if d := to[p] - from[p]; d < n/4-1 || d > n/4+1 {
							t.Errorf("first batch: partition %d gives %d of %d records, want about a quarter", p, d, n)
						}
					}
				}
				batches++
				records += n
				sum += size
				start = end
			}
			if records != 401 || sum != total+50_004 {
				t.Errorf("drained %d records, %d bytes; want 401, %d", records, sum, total+50_004)
			}
			if min := (total + 50_004) / capBytes; batches <= min {
				t.Errorf("%d batches of at most %d bytes for %d bytes, want more than %d", batches, capBytes, sum, min)
			}
		})
	}
	t.Run("a record over the cap alone", func(t *testing.T) {
		src := NewBrokerSource(db, testTopic, testSchema)
		if _, n, err := src.Plan(ctx, Offset(`{}`), Limit{Units: 1000, Bytes: 10}); err != nil || n != 1 {
			t.Errorf("cap below one record: got %d records (%v), want 1", n, err)
		}
	})
}

// TestRunByteCappedBatchesDoNotWaitForTrigger: a batch cut by the byte cap
// (far below the offset cap) is followed at once, as one cut by the offset
// cap: a backlog drains with a trigger longer than the test.
func TestRunByteCappedBatchesDoNotWaitForTrigger(t *testing.T) {
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 2)
	defer db.Close()
	fill(t, db, 350, 50)
	var held int64
	for _, p := range testPartitions(t, db) {
		held += p.Bytes
	}
	sink := newMemSink()
	cfg := Config{CheckpointDir: filepath.Join(dir, "cp"), Trigger: time.Hour, MaxOffsetsPerTrigger: 100_000,
		MaxBytesPerTrigger: held / 5}
	q := newTestQuery(t, cfg, db, sink, nil, &memProgress{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for len(sink.pairs("bronze")) < 350 {
		if time.Now().After(deadline) {
			_, runs := q.Last()
			t.Fatalf("backlog of %d bytes, cap %d, 1 h trigger: %d batches ran, %d of 350 landed", held, held/5, runs, len(sink.pairs("bronze")))
		}
		time.Sleep(10 * time.Millisecond)
	}
	last, runs := q.Last()
	if runs < 5 {
		t.Errorf("%d batches for 5 caps' worth, want at least 5", runs)
	}
	if last.Bytes > held/5 {
		t.Errorf("last batch: %d bytes, cap %d", last.Bytes, held/5)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: got %v, want nil", err)
	}
	checkExactlyOnce(t, sink.pairs("bronze"), endOffsets(t, db), false)
}

// newTestQuery builds a query over a real broker and a memSink.
func newTestQuery(t *testing.T, cfg Config, db *broker.DB, sink Sink, proc Processor, prog ProgressSink) *Query {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "bronze"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	q, err := New(cfg, NewBrokerSource(db, testTopic, testSchema), proc, sink, prog)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestDrainExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 4)
	defer db.Close()
	fill(t, db, 2000, 500)
	sink, prog := newMemSink(), &memProgress{}
	cfg := Config{CheckpointDir: filepath.Join(dir, "cp"), MaxOffsetsPerTrigger: 97, RetainBatches: 5, ProgressEvery: 3}
	q := newTestQuery(t, cfg, db, sink, nil, prog)
	ctx := ctxT(t, 60*time.Second)
	if err := q.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, sink.pairs("bronze"), endOffsets(t, db), false)
	last, runs := q.Last()
	if want := int64((2000 + 96) / 97); runs != want || last.Batch != want-1 {
		t.Errorf("batches: got %d (last %d), want %d", runs, last.Batch, want)
	}
	if last.Lag != 0 || !last.Committed || last.QueryIDChanges != 0 {
		t.Errorf("last progress: got %+v, want lag 0, committed, no id change", last)
	}
	if got := len(prog.rows["bronze"]); int64(got) != runs {
		t.Errorf("progress rows: got %d, want %d", got, runs)
	}
	// Retention keeps the log short.
	ents, _ := os.ReadDir(filepath.Join(dir, "cp", "offsets"))
	if len(ents) > cfg.RetainBatches+10 {
		t.Errorf("offset entries kept: got %d, want <= %d", len(ents), cfg.RetainBatches+10)
	}
	// Draining again with nothing new does nothing.
	q2 := newTestQuery(t, cfg, db, sink, nil, prog)
	if err := q2.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if _, runs := q2.Last(); runs != 0 {
		t.Errorf("second drain batches: got %d, want 0", runs)
	}
	if q2.QueryID() != q.QueryID() {
		t.Errorf("query id after restart: got %s, want %s", q2.QueryID(), q.QueryID())
	}
}

// crashingSink commits, then fires the "sink after commit" hook (a crash
// between the table commit and the commit entry).
type crashingSink struct{ *memSink }

var hookTestSinkCommitted = fault.Register("stream.test-sink-committed", "test only: memSink committed")

func (s crashingSink) Commit(ctx context.Context, b Batch, rows []arrow.RecordBatch) (SinkResult, error) {
	res, err := s.memSink.Commit(ctx, b, rows)
	fault.Hit(hookTestSinkCommitted)
	return res, err
}

// countingProc is a StatefulProcessor whose state is the number of rows it
// has seen; it passes rows through.
type countingProc struct {
	seen   int64
	loaded []int64
}

func (c *countingProc) Process(ctx context.Context, b Batch, in []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	c.seen += countRows(in)
	return in, nil
}

var _ StatefulProcessor = (*countingProc)(nil)

func (c *countingProc) LoadState(_ context.Context, store StateStore, version int64) error {
	c.loaded = append(c.loaded, version)
	c.seen = 0
	data, err := store.LoadState(version)
	if err != nil && !errors.Is(err, ErrNoEntry) {
		return err
	}
	if data != nil {
		c.seen = int64(binary.BigEndian.Uint64(data))
	}
	return nil
}

func (c *countingProc) SaveState(context.Context) ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(c.seen)), nil
}

// TestCrashAtEachHook crashes the runner in process (the armed hook panics)
// at every step of the batch protocol, restarts it and checks exactly-once
// and the state versions. The child-process SIGKILL variant with the real
// table is TestBronzeKill.
func TestCrashAtEachHook(t *testing.T) {
	hooks := []string{hookAfterOffsetEntry, hookAfterStateSave, hookTestSinkCommitted, hookAfterCommitEntry}
	for _, hook := range hooks {
		for _, skip := range []int{0, 3} {
			t.Run(hook, func(t *testing.T) {
				defer fault.Disarm()
				dir := t.TempDir()
				db := openBroker(t, filepath.Join(dir, "broker.db"), 3)
				defer db.Close()
				fill(t, db, 900, 300)
				sink := crashingSink{newMemSink()}
				cfg := Config{CheckpointDir: filepath.Join(dir, "cp"), MaxOffsetsPerTrigger: 50}
				ctx := ctxT(t, 60*time.Second)

				fired := false
				fault.ArmFunc(hook, skip, func(string) { fired = true; panic(errCrash) })
				func() {
					defer func() {
						if r := recover(); r != nil && r != errCrash {
							panic(r)
						}
					}()
					_ = newTestQuery(t, cfg, db, sink, &countingProc{}, nil).Drain(ctx)
				}()
				fault.Disarm()
				if !fired {
					t.Fatalf("hook %s never fired: inconclusive", hook)
				}
				landed := int64(len(sink.pairs("bronze")))
				if landed == 0 && hook != hookAfterOffsetEntry && hook != hookAfterStateSave {
					t.Fatalf("crash landed before anything was committed: inconclusive")
				}
				if landed >= 900 {
					t.Fatalf("crash landed after the backlog was drained: inconclusive")
				}
				before := int64(-1)
				if cp, err := OpenCheckpoint(cfg.CheckpointDir); err == nil {
					if c, ok, _ := cp.LatestCommit(); ok {
						before = c.Batch
					}
				}
				proc := &countingProc{}
				q := newTestQuery(t, cfg, db, sink, proc, nil)
				if err := q.Drain(ctx); err != nil {
					t.Fatal(err)
				}
				checkExactlyOnce(t, sink.pairs("bronze"), endOffsets(t, db), false)
				// The final state version counts every row exactly once.
				cp, _ := OpenCheckpoint(cfg.CheckpointDir)
				last, _, _ := cp.LatestCommit()
				data, err := cp.LoadState(last.Batch)
				if err != nil {
					t.Fatal(err)
				}
				if got := binary.BigEndian.Uint64(data); got != 900 {
					t.Errorf("state after last batch: got %d rows, want 900", got)
				}
				// The restart's first batch (a re-run or the next one) loaded
				// the version of the last batch with a commit entry.
				if len(proc.loaded) == 0 || proc.loaded[0] != before {
					t.Errorf("first loaded state version: got %v, want %d", proc.loaded, before)
				}
			})
		}
	}
}

func TestCheckpointLossModes(t *testing.T) {
	tests := []struct {
		name     string
		mode     CheckpointLoss
		wantDups int
	}{
		{"rebuild from table", RebuildFromTable, 0},
		{"start fresh (Spark)", StartFresh, 600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openBroker(t, filepath.Join(dir, "broker.db"), 4)
			defer db.Close()
			fill(t, db, 600, 200)
			sink, prog := newMemSink(), &memProgress{}
			cfg := Config{CheckpointDir: filepath.Join(dir, "cp"), MaxOffsetsPerTrigger: 70, OnCheckpointLoss: tc.mode}
			ctx := ctxT(t, 60*time.Second)
			q1 := newTestQuery(t, cfg, db, sink, nil, prog)
			if err := q1.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(cfg.CheckpointDir); err != nil {
				t.Fatal(err)
			}
			fill(t, db, 400, 200)
			q2 := newTestQuery(t, cfg, db, sink, nil, prog)
			if err := q2.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			dups := checkExactlyOnce(t, sink.pairs("bronze"), endOffsets(t, db), tc.wantDups > 0)
			if dups != tc.wantDups {
				t.Errorf("duplicates: got %d, want %d", dups, tc.wantDups)
			}
			if q2.QueryID() == q1.QueryID() {
				t.Errorf("query id: got unchanged %s, want a new id", q2.QueryID())
			}
			last, _ := q2.Last()
			if last.QueryIDChanges != 1 || last.PreviousQueryID != q1.QueryID() {
				t.Errorf("progress: got changes %d previous %q, want 1, %q", last.QueryIDChanges, last.PreviousQueryID, q1.QueryID())
			}
			rows := prog.rows["bronze"]
			ids := sortedBatches(rows)
			for i := 1; i < len(ids); i++ {
				if ids[i] == ids[i-1] {
					t.Errorf("progress batch %d stored twice", ids[i])
				}
			}
		})
	}
}

func TestRunFollowsAndStops(t *testing.T) {
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 2)
	defer db.Close()
	sink := newMemSink()
	cfg := Config{CheckpointDir: filepath.Join(dir, "cp"), Trigger: 20 * time.Millisecond, MaxOffsetsPerTrigger: 64}
	q := newTestQuery(t, cfg, db, sink, nil, &memProgress{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	for round := 0; round < 3; round++ {
		fill(t, db, 150, 50)
		want := int64(150 * (round + 1))
		deadline := time.Now().Add(30 * time.Second)
		for int64(len(sink.pairs("bronze"))) < want {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: landed %d, want %d", round, len(sink.pairs("bronze")), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: got %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	checkExactlyOnce(t, sink.pairs("bronze"), endOffsets(t, db), false)
}

// TestRunCappedBatchesDoNotWaitForTrigger: with a trigger far longer than
// the test, a backlog of several capped batches still drains, and the
// batch after the last capped one (which is not capped) waits for the
// trigger: the next append is not picked up until then.
func TestRunCappedBatchesDoNotWaitForTrigger(t *testing.T) {
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 2)
	defer db.Close()
	fill(t, db, 350, 50)
	sink := newMemSink()
	cfg := Config{CheckpointDir: filepath.Join(dir, "cp"), Trigger: time.Hour, MaxOffsetsPerTrigger: 100}
	q := newTestQuery(t, cfg, db, sink, nil, &memProgress{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for _, runs := q.Last(); runs < 4; _, runs = q.Last() {
		if time.Now().After(deadline) {
			t.Fatalf("backlog of 350 in batches of 100 with a 1 h trigger: %d batches ran, want 4", runs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := len(sink.pairs("bronze")); got != 350 {
		t.Errorf("landed %d, want 350", got)
	}
	// The last batch was not capped: the query now waits out its trigger.
	fill(t, db, 10, 10)
	time.Sleep(300 * time.Millisecond)
	if got := len(sink.pairs("bronze")); got != 350 {
		t.Errorf("after an uncapped batch the query ran before its trigger: landed %d, want 350", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: got %v, want nil", err)
	}
}
