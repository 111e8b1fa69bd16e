package stream

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"lakehouse/internal/syncbuf"
	"lakehouse/table"
)

func openLake(t testing.TB, dir string) *table.Lake {
	t.Helper()
	return openLakeWith(t, table.Config{Dir: dir})
}

// openLakeWith opens the lake of cfg with its tables.
func openLakeWith(t testing.TB, cfg table.Config) *table.Lake {
	t.Helper()
	ctx := context.Background()
	lake, err := table.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.EnsureTables(ctx); err != nil {
		lake.Close()
		t.Fatal(err)
	}
	return lake
}

// fakeS3 serves an in-memory S3 with the given buckets on 127.0.0.1 and
// returns its endpoint.
func fakeS3(t testing.TB, buckets ...string) string {
	t.Helper()
	mem := s3mem.New()
	for _, b := range buckets {
		if err := mem.CreateBucket(b); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(gofakes3.New(mem).Server())
	t.Cleanup(srv.Close)
	return srv.URL
}

// bronzePairs reads every (partition, offset) of bronze with a fresh scan.
func bronzePairs(t testing.TB, lake *table.Lake) []pair {
	t.Helper()
	recs, err := lake.Scan(context.Background(), table.Bronze)
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	return pairsOf(recs)
}

// progressRows reads ops.stream_progress: batch_id -> rows stored, and the
// max query_id_changes seen.
func progressRows(t testing.TB, lake *table.Lake, query string) (map[int64]int, int64) {
	t.Helper()
	recs, err := lake.Scan(context.Background(), table.StreamProgress)
	if err != nil {
		t.Fatal(err)
	}
	defer release(recs)
	out := map[int64]int{}
	var changes int64
	for _, r := range recs {
		idx := func(name string) int { return r.Schema().FieldIndices(name)[0] }
		qc := r.Column(idx("query")).(*array.String)
		bc := r.Column(idx("batch_id")).(*array.Int64)
		cc := r.Column(idx("query_id_changes")).(*array.Int64)
		for i := 0; i < int(r.NumRows()); i++ {
			if qc.Value(i) != query {
				continue
			}
			out[bc.Value(i)]++
			changes = max(changes, cc.Value(i))
		}
	}
	return out, changes
}

func TestBronzeDrain(t *testing.T) {
	dir := t.TempDir()
	db := openBroker(t, filepath.Join(dir, "broker.db"), 4)
	defer db.Close()
	fill(t, db, 3000, 1000)
	lake := openLake(t, dir)
	defer lake.Close()
	q, err := NewBronze(db, lake, Config{DataDir: dir, MaxOffsetsPerTrigger: 700, Logger: slog.New(slog.DiscardHandler), ProgressEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.Config().CheckpointDir, filepath.Join(dir, "checkpoints", "bronze"); got != want {
		t.Errorf("checkpoint dir: got %s, want %s", got, want)
	}
	ctx := ctxT(t, 120*time.Second)
	if err := q.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, bronzePairs(t, lake), endOffsets(t, db), false)
	m, ok, err := lake.LastCommitted(ctx, table.Bronze, BronzeQuery)
	if err != nil || !ok {
		t.Fatalf("marker: %v %v", ok, err)
	}
	if want := NextOffsets(endOffsets(t, db)).Offset(); Offset(m.Offsets) != want || m.Batch != 4 {
		t.Errorf("marker: got batch %d offsets %s, want 4, %s", m.Batch, m.Offsets, want)
	}
	rows, _ := progressRows(t, lake, BronzeQuery)
	for b := int64(0); b <= 4; b++ {
		if rows[b] != 1 {
			t.Errorf("progress rows of batch %d: got %d, want 1", b, rows[b])
		}
	}
	// The sink's marker carries the run's query id.
	sm, _, err := (&TableSink{Lake: lake, Table: table.Bronze}).LastCommitted(ctx, BronzeQuery)
	if err != nil || sm.QueryID != q.QueryID() {
		t.Errorf("marker query id: got %q (%v), want %q", sm.QueryID, err, q.QueryID())
	}
}

// TestBronzeCheckpointLoss stops bronze mid-backlog, deletes its checkpoint
// and restarts it, in both modes.
func TestBronzeCheckpointLoss(t *testing.T) {
	tests := []struct {
		name     string
		mode     CheckpointLoss
		wantDups bool
	}{
		{"default rebuilds from table", RebuildFromTable, false},
		{"start fresh duplicates as Spark", StartFresh, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openBroker(t, filepath.Join(dir, "broker.db"), 4)
			defer db.Close()
			const total = 4000
			fill(t, db, total, 1000)
			lake := openLake(t, dir)
			defer lake.Close()
			cfg := Config{DataDir: dir, MaxOffsetsPerTrigger: 250, Trigger: 10 * time.Millisecond,
				OnCheckpointLoss: tc.mode, Logger: slog.New(slog.DiscardHandler)}
			q1, err := NewBronze(db, lake, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(ctxT(t, 120*time.Second))
			done := make(chan error, 1)
			go func() { done <- q1.Run(ctx) }()
			deadline := time.Now().Add(60 * time.Second)
			for {
				if _, runs := q1.Last(); runs >= 4 {
					break
				}
				if time.Now().After(deadline) {
					cancel()
					t.Fatalf("bronze ran %d batches in 60 s, want 4 before the checkpoint is deleted (Run: %v)", func() int64 { _, r := q1.Last(); return r }(), <-done)
				}
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			before := len(bronzePairs(t, lake))
			if before == 0 || before >= total {
				t.Fatalf("inconclusive: %d of %d rows committed when the checkpoint was deleted", before, total)
			}
			if err := os.RemoveAll(q1.Config().CheckpointDir); err != nil {
				t.Fatal(err)
			}
			var logged syncbuf.Buffer
			cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
			q2, err := NewBronze(db, lake, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := q2.Drain(ctxT(t, 120*time.Second)); err != nil {
				t.Fatal(err)
			}
			// The change is logged as an error naming both ids, and the
			// fresh start says duplicates follow.
			log := logged.String()
			if !strings.Contains(log, "level=ERROR msg=\"STREAM QUERY ID CHANGED") ||
				!strings.Contains(log, "previous_query_id="+q1.QueryID()) || !strings.Contains(log, "new_query_id="+q2.QueryID()) {
				t.Errorf("the query-id change was not logged as an error naming %s and %s:\n%s", q1.QueryID(), q2.QueryID(), log)
			}
			if got := strings.Contains(log, "STREAM START FRESH"); got != tc.wantDups {
				t.Errorf("log says it starts fresh (duplicates follow): %v, want %v", got, tc.wantDups)
			}
			dups := checkExactlyOnce(t, bronzePairs(t, lake), endOffsets(t, db), tc.wantDups)
			if tc.wantDups && dups != before {
				t.Errorf("duplicates: got %d, want %d (every row committed before the loss)", dups, before)
			}
			if q2.QueryID() == q1.QueryID() {
				t.Errorf("query id: got unchanged %s, want a new one", q2.QueryID())
			}
			last, _ := q2.Last()
			if last.QueryIDChanges != 1 || last.PreviousQueryID != q1.QueryID() {
				t.Errorf("progress: got query_id_changes %d previous %q, want 1, %q", last.QueryIDChanges, last.PreviousQueryID, q1.QueryID())
			}
			if _, changes := progressRows(t, lake, BronzeQuery); changes != 1 {
				t.Errorf("ops.stream_progress query_id_changes: got %d, want 1", changes)
			}
		})
	}
}
