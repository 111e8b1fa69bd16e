package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest/replay"
	"lakehouse/internal/crashtest"
	"lakehouse/internal/fault"
)

// envSoak, "1", adds many more crash rounds to TestCrash.
const envSoak = "LAKEHOUSE_INGEST_SOAK"

const crashSource = "crash"

// TestMain runs crashChild instead of the tests in TestCrash's child
// process (crashtest role "ingest").
func TestMain(m *testing.M) {
	os.Exit(crashtest.Main(m, map[string]crashtest.Role{"ingest": crashChild}))
}

// crashChild is the child side of TestCrash (settings url, db, hook,
// skip): it ingests from the parent's replay server into the broker file
// until it is killed (by an armed fault hook or by the parent) or gets
// SIGTERM (then it stops cleanly). It prints "progress batches=N
// position=P" after each append.
func crashChild(s crashtest.Spec) error {
	s.Arm()
	db, err := broker.Open(s.Get("db"), broker.Options{})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err = Run(ctx, db, Config{
		URL:        s.Get("url"),
		Source:     crashSource,
		BatchMax:   200,
		BatchDelay: 20 * time.Millisecond,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Progress: func(s Stats) {
			fmt.Printf("progress batches=%d position=%s\n", s.Batches, s.Position)
		},
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// crashRound is how one child run ends.
type crashRound struct {
	hook string // armed hook (the child kills itself there), or ""
	skip int
	// killAfter > 0: the parent SIGKILLs the child once it has reported this
	// many appended batches. 0 with no hook: the parent sends SIGTERM once
	// the child reports the final position (a clean stop).
	killAfter int
}

func startChild(t *testing.T, url, dbPath string, rd crashRound) *crashtest.Child {
	t.Helper()
	return crashtest.Start(t, "ingest", "url", url, "db", dbPath, "hook", rd.hook, "skip", strconv.Itoa(rd.skip))
}

// reported reports whether the child has printed the progress line of
// position pos.
func reported(c *crashtest.Child, pos string) bool {
	for _, l := range c.Lines("progress ") {
		if _, p, _ := strings.Cut(l, "position="); p == pos {
			return true
		}
	}
	return false
}

// storedState is what the broker holds after a child run.
type storedState struct {
	position string
	posIndex int // index of the first event of the stored position
	ids      map[string]int
	dlq      map[string]int // DLQ value -> copies
	dlqGroup map[int64]int  // stream position -> distinct DLQ values
	records  int
	maxIndex int // highest replay index whose event is stored (-1: none)
}

func readState(t *testing.T, dbPath string, r *replay.Server, index map[string]int) storedState {
	t.Helper()
	db := openBroker(t, dbPath)
	defer db.Close()
	pos, err := db.Meta(context.Background(), MetaKey(crashSource))
	if err != nil {
		t.Fatal(err)
	}
	st := storedState{position: string(pos), posIndex: -1, dlq: map[string]int{}, dlqGroup: map[int64]int{}, maxIndex: -1}
	if len(pos) > 0 {
		idx, _, ok := r.GroupStart(string(pos))
		if !ok {
			t.Fatalf("stored position %q is not a replay id", pos)
		}
		st.posIndex = idx
	}
	topic := readTopic(t, db, DefaultTopic)
	st.ids = keyCounts(topic)
	for id := range st.ids {
		if i, ok := index[id]; ok && i > st.maxIndex {
			st.maxIndex = i
		}
	}
	dlq := readTopic(t, db, DefaultDLQTopic)
	for _, m := range dlq {
		v := string(m.Value)
		if st.dlq[v] == 0 {
			_, p, _ := r.GroupStart(string(m.Header(HeaderSourceID)))
			st.dlqGroup[p]++
		}
		st.dlq[v]++
	}
	st.records = len(topic) + len(dlq)
	return st
}

// checkNotAhead returns an error unless every event up to the first event
// of the stored position is stored (valid ones in the topic, violations in
// the DLQ): the resume position must never be ahead of the stored events.
func checkNotAhead(st storedState, evs []replay.Event, group int) error {
	wantDLQ := map[int64]int{}
	for _, e := range evs {
		if e.Index > st.posIndex {
			break
		}
		if e.Kind == replay.KindViolation {
			wantDLQ[e.Position]++
			continue
		}
		if st.ids[e.MetaID] == 0 {
			return fmt.Errorf("stored position %s (event %d) is ahead of the stored events: event %d (%s) is missing",
				st.position, st.posIndex, e.Index, e.MetaID)
		}
	}
	for p, n := range wantDLQ {
		// Violations of the position's own group after posIndex may be missing.
		if int(p)*group == st.posIndex {
			continue
		}
		if st.dlqGroup[p] < n {
			return fmt.Errorf("stored position %s is ahead of the DLQ: position %d has %d of %d violations",
				st.position, p, st.dlqGroup[p], n)
		}
	}
	return nil
}

// TestCheckNotAheadDetectsLoss is the negative control of the crash test's
// main check: a position stored ahead of the events must be reported.
func TestCheckNotAheadDetectsLoss(t *testing.T) {
	r := replay.New(replay.Config{Seed: 1, IDGroup: 2})
	r.Loops(replay.Generate(1, 10), 1)
	r.Violations(2)
	evs := r.Events(0)
	all := storedState{ids: map[string]int{}, dlqGroup: map[int64]int{5: 2}}
	for _, e := range evs[:10] {
		all.ids[e.MetaID] = 1
	}
	tests := []struct {
		name    string
		st      func() storedState
		wantErr bool
	}{
		{"everything stored", func() storedState { s := all; s.posIndex = 10; return s }, false},
		{"position at the last stored event", func() storedState {
			s := all
			s.ids = map[string]int{}
			for _, e := range evs[:5] {
				s.ids[e.MetaID] = 1
			}
			s.posIndex = 4
			return s
		}, false},
		{"an event before the position is missing", func() storedState {
			s := all
			s.ids = map[string]int{}
			for _, e := range evs[:10] {
				if e.Index != 3 {
					s.ids[e.MetaID] = 1
				}
			}
			s.posIndex = 8
			return s
		}, true},
		{"a violation before the position is missing", func() storedState {
			s := all
			s.dlqGroup = map[int64]int{5: 1}
			s.posIndex = 12
			return s
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkNotAhead(tc.st(), evs, 2)
			if (err != nil) != tc.wantErr {
				t.Fatalf("checkNotAhead: got %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestCrash(t *testing.T) {
	const group, rewind = 4, 3
	rounds := []crashRound{
		{hook: hookAfterAppend, skip: 4},    // durable append done, ingest not told yet
		{hook: "broker.in-commit", skip: 6}, // batch written into the bbolt tx, not committed
		{killAfter: 3},                      // SIGKILL at an arbitrary moment
		{hook: hookBeforeAppend, skip: 5},   // batch built, not appended
		{killAfter: 2},
	}
	loopLen := 4000
	if os.Getenv(envSoak) == "1" {
		loopLen = 20000
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
		hooks := []string{hookAfterAppend, hookBeforeAppend, "broker.in-commit", "broker.after-commit", ""}
		for range 20 {
			h := hooks[rng.IntN(len(hooks))]
			if h == "" {
				rounds = append(rounds, crashRound{killAfter: 1 + rng.IntN(10)})
			} else {
				// skip >= 1: a hook before the first commit would prove nothing.
				rounds = append(rounds, crashRound{hook: h, skip: 1 + rng.IntN(12)})
			}
		}
	}

	r, url := startReplay(t, replay.Config{Seed: 31, Rate: 20000, IDGroup: group, Rewind: rewind, Restamp: true})
	rec := replay.Generate(31, loopLen)
	r.Loops(rec, 1)
	r.Violations(20)
	r.Loops(rec, 1)
	r.Violations(20)
	evs := r.Events(0)
	index := map[string]int{}
	lastValid := 0
	for _, e := range evs {
		if e.Kind != replay.KindViolation {
			index[e.MetaID] = e.Index
			lastValid = e.Index
		}
	}
	final := r.ID(int64((len(evs) - 1) / group))
	dbPath := filepath.Join(t.TempDir(), "broker.db")

	type window struct{ from, to int } // a resume resends events from..to
	var windows []window
	prev := storedState{maxIndex: -1, posIndex: -1}
	record := func(st storedState) {
		if st.position != "" {
			from, _ := r.ResumeIndex(st.position)
			if from <= st.maxIndex {
				windows = append(windows, window{from, st.maxIndex})
			}
		}
		prev = st
	}

	for i, rd := range rounds {
		c := startChild(t, url, dbPath, rd)
		if rd.killAfter > 0 {
			if !c.WaitFor("progress ", rd.killAfter, time.Minute) {
				t.Fatalf("round %d: child reported %d appends, want %d before the kill\n%s", i, c.Count("progress "), rd.killAfter, crashtest.Tail(c.Output(), 40))
			}
			c.Kill(t)
		}
		err := c.Wait(t, 60*time.Second)
		if !crashtest.WasKilled(err) {
			t.Fatalf("round %d: child ended with %v, want death by SIGKILL\n%s", i, err, crashtest.Tail(c.Output(), 40))
		}
		if rd.hook != "" && !c.Fired(rd.hook) {
			t.Fatalf("round %d: child died but %q is not in its output: the hook did not fire\n%s", i, fault.Marker(rd.hook), crashtest.Tail(c.Output(), 40))
		}
		st := readState(t, dbPath, r, index)
		// Conclusive only if this run committed something and the stream was
		// not over: a kill before the first commit or after the last event
		// proves nothing about the resume position.
		if st.records <= prev.records {
			t.Fatalf("round %d: inconclusive: nothing was committed before the kill (records %d -> %d)", i, prev.records, st.records)
		}
		if st.maxIndex >= lastValid {
			t.Fatalf("round %d: inconclusive: the whole stream was stored before the kill", i)
		}
		if err := checkNotAhead(st, evs, group); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		t.Logf("round %d (%s:%d kill-after %d): %d records, max index %d, position index %d",
			i, rd.hook, rd.skip, rd.killAfter, st.records, st.maxIndex, st.posIndex)
		record(st)
	}

	// Drain: clean runs (SIGTERM once the final position is reported) until
	// every event is stored.
	for attempt := 0; ; attempt++ {
		if attempt == 3 {
			t.Fatal("the stream is still incomplete after 3 clean runs")
		}
		c := startChild(t, url, dbPath, crashRound{})
		deadline := time.Now().Add(2 * time.Minute)
		for !reported(c, final) && !c.Exited() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		c.Terminate()
		if err := c.Wait(t, time.Minute); err != nil {
			t.Fatalf("clean run: %v\n%s", err, crashtest.Tail(c.Output(), 40))
		}
		st := readState(t, dbPath, r, index)
		if err := checkNotAhead(st, evs, group); err != nil {
			t.Fatalf("clean run %d: %v", attempt, err)
		}
		record(st)
		t.Logf("clean run %d: %d records, max index %d, position index %d, %d distinct DLQ records",
			attempt, st.records, st.maxIndex, st.posIndex, len(st.dlq))
		if st.maxIndex == lastValid && len(st.dlq) == 40 {
			break
		}
	}

	// Every replayed meta.id is stored; duplicates only from resume windows.
	dups := 0
	for _, e := range evs {
		if e.Kind == replay.KindViolation {
			continue
		}
		n := prev.ids[e.MetaID]
		if n == 0 {
			t.Errorf("event %d (%s) lost", e.Index, e.MetaID)
			continue
		}
		allowed := 1
		for _, w := range windows {
			if w.from <= e.Index && e.Index <= w.to {
				allowed++
			}
		}
		if n > allowed {
			t.Errorf("event %d stored %d times, but only %d resume windows cover it", e.Index, n, allowed-1)
		}
		dups += n - 1
	}
	if got := len(prev.dlq); got != 40 {
		t.Errorf("distinct DLQ records: got %d, want 40", got)
	}
	t.Logf("%d events, %d crash rounds, %d resume windows, %d duplicates", len(evs), len(rounds), len(windows), dups)
}
