package sessions

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"lakehouse/internal/crashtest"
	"lakehouse/stream"
	"lakehouse/stream/silver"
	"lakehouse/stream/silver/silvertest"
	"lakehouse/table"
)

const (
	killSnapshots = 40
	killPerSnap   = 25
)

// killSessions is the kill test's sessions configuration: a maximum short
// enough that the scenario's busy editors (active for its 80 minutes) have
// their sessions split, several times each.
var killSessions = Config{MaxSessionLength: 20 * time.Minute}

func killConfig(dir string) stream.Config {
	return stream.Config{DataDir: dir, MaxOffsetsPerTrigger: 1, Trigger: -1, RetainBatches: 30,
		ProgressEvery: 3, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
}

// TestMain runs sessionsKillChild instead of the tests in the kill test's
// child process (crashtest role "kill").
func TestMain(m *testing.M) {
	os.Exit(crashtest.Main(m, map[string]crashtest.Role{"kill": sessionsKillChild}))
}

// sessionsKillChild is the child's body: sessions drain silver until done
// or killed (by an armed hook or by the parent).
func sessionsKillChild(s crashtest.Spec) error {
	dir := s.Get("dir")
	ctx := context.Background()
	lake, err := table.Open(ctx, table.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer lake.Close()
	cfg := killConfig(dir)
	if s.Get("hook") != "" {
		cfg.ProgressEvery, cfg.ProgressInterval = 1<<30, time.Hour // keep table hooks in sink commits
	}
	s.Arm()
	q, _, err := NewQuery(lake, cfg, killSessions)
	if err != nil {
		return err
	}
	return q.Drain(ctx)
}

type killRound struct {
	hook string // "" = random SIGKILL after a few batches
	skip int    // -1: fire on the last batch's commit
}

// TestSessionsKill lands a scenario in silver, then kills the sessions query
// at every crash point and at random, and checks that the sessions are
// exactly those computed from the scenario, each once.
func TestSessionsKill(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	sc := silvertest.Generate(11, killSnapshots, killPerSnap, silver.DefaultWatermarkDelay)
	lake := silvertest.OpenLake(t, dir)
	if err := sc.CommitBronze(ctx, lake); err != nil {
		t.Fatal(err)
	}
	scfg := stream.Config{DataDir: dir, MaxOffsetsPerTrigger: 1, Trigger: -1, Logger: slog.New(slog.DiscardHandler)}
	sq, _, err := silver.NewQuery(lake, scfg, silver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sq.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	lake.Close()
	lastBatch := int64(len(sc.Snapshots) - 1) // one sessions batch per silver snapshot

	rounds := []killRound{
		{"stream.after-offset-entry", 2},
		{"sessions.state-encoded", 1},
		{"stream.after-state-save", 1},
		{"table.after-data-files", 1},
		{"", 0},
		{"stream.after-commit-entry", 2},
		{"table.after-data-files", -1}, // the flusher batch, which emits most sessions
		{"table.after-commit", -1},     // the same batch again, after its commit
	}
	for i, r := range rounds {
		name := r.hook
		if name == "" {
			name = "random"
		}
		t.Run(fmt.Sprintf("%d-%s", i, name), func(t *testing.T) {
			killOnce(t, dir, r, lastBatch)
			checkNoDuplicates(t, dir)
		})
		if t.Failed() {
			return
		}
	}

	lake = silvertest.OpenLake(t, dir)
	defer lake.Close()
	cfg := killConfig(dir)
	cfg.Logger = slog.New(slog.DiscardHandler)
	q, _, err := NewQuery(lake, cfg, killSessions)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	verifySessions(t, lake, sc, lastBatch)
}

// killOnce runs one child and kills it (silvertest.KillOnce).
func killOnce(t *testing.T, dir string, r killRound, lastBatch int64) {
	silvertest.KillOnce(t, silvertest.Kill{
		Dir: dir, Table: table.EditorSessions, Query: QueryName,
		Role: "kill", Hook: r.hook,
		Skip: func(before int64) int {
			skip := r.skip
			if skip < 0 {
				skip = int(lastBatch-before) - 1 // hits: one per batch still to commit
			}
			t.Logf("hook %s: skip %d", r.hook, skip)
			return skip
		},
		LastBatch: lastBatch, Seed: 2,
	})
}

func scanSessions(t testing.TB, lake *table.Lake) []sessionRow {
	t.Helper()
	recs, err := lake.Scan(context.Background(), table.EditorSessions)
	if err != nil {
		t.Fatal(err)
	}
	var out []sessionRow
	for _, r := range recs {
		out = append(out, decodeSessions(r)...)
		r.Release()
	}
	return out
}

func checkNoDuplicates(t *testing.T, dir string) {
	t.Helper()
	lake := silvertest.OpenLake(t, dir)
	defer lake.Close()
	seen := map[string]bool{}
	for _, s := range scanSessions(t, lake) {
		if seen[s.ID] {
			t.Errorf("after kill: session %s twice", s.ID)
		}
		seen[s.ID] = true
	}
}

// verifySessions compares the table with the sessions computed from the
// scenario, and checks one snapshot per batch.
func verifySessions(t *testing.T, lake *table.Lake, sc silvertest.Scenario, lastBatch int64) {
	t.Helper()
	got := map[string]sessionRow{}
	for _, s := range scanSessions(t, lake) {
		if _, dup := got[s.ID]; dup {
			t.Errorf("session %s stored twice", s.ID)
		}
		got[s.ID] = s
	}
	want := sc.ExpectedSessions(DefaultSessionGap, killSessions.MaxSessionLength)
	if len(got) != len(want) {
		t.Errorf("sessions: got %d, want %d (computed from the scenario)", len(got), len(want))
	}
	var edits, wantEdits int64
	for _, w := range want {
		wantEdits += w.Edits
		id := sessionID(w.Wiki, w.User, w.Start.UnixMicro())
		g, ok := got[id]
		if !ok {
			t.Errorf("missing session %s/%s %s-%s (%d edits)", w.Wiki, w.User, w.Start.Format("15:04:05"), w.End.Format("15:04:05"), w.Edits)
			continue
		}
		gw := silvertest.Session{Wiki: g.Wiki, User: g.User, Start: g.Start, End: g.End, Edits: g.Edits,
			Pages: g.Pages, Added: g.Added, Removed: g.Removed, Bot: g.Bot}
		if !gw.Start.Equal(w.Start) || !gw.End.Equal(w.End) || gw.Wiki != w.Wiki || gw.User != w.User ||
			gw.Edits != w.Edits || gw.Pages != w.Pages || gw.Added != w.Added || gw.Removed != w.Removed || gw.Bot != w.Bot {
			t.Errorf("session %s: got %+v, want %+v", id, gw, w)
		}
	}
	for _, g := range got {
		edits += g.Edits
	}
	if edits != wantEdits {
		t.Errorf("edits in sessions: got %d, want %d", edits, wantEdits)
	}
	long := 0
	for _, w := range want {
		if w.End.Sub(w.Start) > killSessions.MaxSessionLength*3/4 {
			long++
		}
	}
	t.Logf("%d sessions with %d edits, as computed from the scenario; %d of them last more than 3/4 of the maximum",
		len(want), wantEdits, long)
	if len(want) < 10 || long < 5 {
		t.Errorf("scenario too small: %d sessions, %d near the maximum; want >= 10, 5", len(want), long)
	}

	snaps, err := lake.AppendsAfter(context.Background(), table.EditorSessions, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Batches that emitted sessions are one snapshot each; empty batches
	// commit the marker only, which must stand at the last batch.
	batches := map[string]int{}
	var rows int64
	for _, s := range snaps {
		if s.Summary[table.SummaryQuery] == QueryName {
			batches[s.Summary[table.SummaryBatchID]]++
			n, _ := strconv.ParseInt(s.Summary["added-records"], 10, 64)
			rows += n
		}
	}
	for b, n := range batches {
		if n != 1 {
			t.Errorf("sessions batch %s committed %d times", b, n)
		}
	}
	if rows != int64(len(want)) {
		t.Errorf("rows added by sessions snapshots: got %d, want %d", rows, len(want))
	}
	m, ok, err := lake.LastCommitted(context.Background(), table.EditorSessions, QueryName)
	if err != nil || !ok || m.Batch != lastBatch {
		t.Errorf("sessions marker: got %+v %v %v, want batch %d", m, ok, err, lastBatch)
	}
}
