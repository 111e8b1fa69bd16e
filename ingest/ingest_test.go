package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest/replay"
)

// checkStored verifies the broker against the replay: every valid
// (non-canary) event's meta.id is in the topic, every violation and
// oversized event is in the DLQ, canaries are nowhere, and each id is stored
// at most 1+maxDup times. It returns the stored topic messages.
func checkStored(t *testing.T, db broker.Log, r *replay.Server, maxDup int) []broker.Message {
	t.Helper()
	topic := readTopic(t, db, DefaultTopic)
	dlq := readTopic(t, db, DefaultDLQTopic)
	counts := keyCounts(topic)
	wantDLQ := 0
	for _, e := range r.Events(0) {
		switch e.Kind {
		case replay.KindViolation, replay.KindOversized:
			wantDLQ++
		case replay.KindCanary:
			if counts[e.MetaID] != 0 {
				t.Errorf("canary %s stored in the topic", e.MetaID)
			}
		default:
			if counts[e.MetaID] == 0 {
				t.Errorf("event %d (%s, %s) missing from the topic", e.Index, e.Kind, e.MetaID)
			}
		}
	}
	for id, n := range counts {
		if n > 1+maxDup {
			t.Errorf("meta.id %s stored %d times, want at most %d", id, n, 1+maxDup)
		}
	}
	distinct := map[string]bool{}
	for _, m := range dlq {
		distinct[string(m.Value)] = true
	}
	if len(distinct) != wantDLQ || len(dlq) > wantDLQ*(1+maxDup) {
		t.Errorf("DLQ records: got %d (%d distinct), want %d distinct and at most %d", len(dlq), len(distinct), wantDLQ, wantDLQ*(1+maxDup))
	}
	return topic
}

// allStored reports whether every valid non-canary event of the replay is in
// the topic (the broker may be appended to concurrently).
func allStored(db broker.Log, r *replay.Server) bool {
	ctx := context.Background()
	offs, err := db.Offsets(ctx, DefaultTopic)
	if err != nil {
		return false
	}
	evs := r.Events(0)
	var n int64
	for _, p := range offs {
		n += p.End - p.Start
	}
	if n < int64(len(evs))/2 {
		return false // cheap early answer while most is missing
	}
	have := map[string]bool{}
	for _, p := range offs {
		for from := p.Start; from < p.End; {
			ms, err := db.Read(ctx, DefaultTopic, p.Partition, from, 10_000)
			if err != nil || len(ms) == 0 {
				return false
			}
			for _, m := range ms {
				have[string(m.Key)] = true
			}
			from = ms[len(ms)-1].Offset + 1
		}
	}
	for _, e := range evs {
		if (e.Kind == replay.KindLoop || e.Kind == replay.KindLate || e.Kind == replay.KindResend) && !have[e.MetaID] {
			return false
		}
	}
	return true
}

func TestEndToEnd(t *testing.T) {
	const seed = 21
	r, url := startReplay(t, replay.Config{Seed: seed, Restamp: true, IDGroup: 3, Rewind: 2})
	r.Loops(replay.Generate(seed, 2500), 2)
	r.Violations(37)
	r.Canaries(5)
	r.Oversized(3, 9000)
	r.Late(20, 2*time.Hour)
	total := int64(r.Len())

	db := tempBroker(t)
	var progressCalls int64
	var mu sync.Mutex
	in, stop := runIngest(t, db, Config{URL: url, Source: "e2e", BatchMax: 500, MaxEventBytes: 8192,
		Progress: func(Stats) { mu.Lock(); progressCalls++; mu.Unlock() }})
	waitFor(t, 60*time.Second, "every event appended", func() bool {
		s := in.Stats()
		return s.Appended+s.DLQ+s.Canary == total
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	topic := checkStored(t, db, r, 0)
	c := r.Counts()
	if got, want := int64(len(topic)), c.OnTime+c.Late; got != want {
		t.Errorf("topic records: got %d, want %d (on time %d + late %d)", got, want, c.OnTime, c.Late)
	}
	s := in.Stats()
	want := Stats{Seen: total, Appended: c.OnTime + c.Late, DLQ: c.Violations + c.Oversized, Canary: c.Canaries,
		Batches: s.Batches, Bytes: s.Bytes, Position: fmt.Sprintf(`[{"topic":"%s","partition":0,"offset":%d}]`, replay.DefaultTopic, (total-1)/3)}
	if s != want {
		t.Errorf("stats: got %+v, want %+v", s, want)
	}
	if s.Batches < total/500 || progressCalls != s.Batches {
		t.Errorf("batches: got %d (progress calls %d), want >= %d and equal", s.Batches, progressCalls, total/500)
	}
	pos, err := db.Meta(context.Background(), MetaKey("e2e"))
	if err != nil || string(pos) != s.Position {
		t.Errorf("stored position: got %q, %v; want %q", pos, err, s.Position)
	}
	// The topic is partitioned by meta.id.
	offs, _ := db.Offsets(context.Background(), DefaultTopic)
	if len(offs) != DefaultPartitions {
		t.Errorf("partitions: got %d, want %d", len(offs), DefaultPartitions)
	}
	for _, p := range offs {
		if p.End == 0 {
			t.Errorf("partition %d is empty", p.Partition)
		}
	}
	for _, m := range readTopic(t, db, DefaultDLQTopic) {
		if len(m.Header(HeaderReason)) == 0 || len(m.Header(HeaderSourceID)) == 0 || string(m.Header(HeaderSourceURL)) != url {
			t.Errorf("DLQ record %d/%d: headers %v", m.Partition, m.Offset, m.Headers)
		}
	}

	// A restart resumes at the stored position: only the resume window
	// (the rest of the id group plus Rewind) comes again.
	r.Loops(replay.Generate(seed+1, 300), 1)
	in2, stop2 := runIngest(t, db, Config{URL: url, Source: "e2e", BatchMax: 500, MaxEventBytes: 8192})
	start, _ := r.ResumeIndex(s.Position)
	waitFor(t, 60*time.Second, "the new loop appended", func() bool {
		s := in2.Stats()
		return s.Seen == int64(r.Len()-start) && s.Appended+s.DLQ+s.Canary == s.Seen
	})
	if err := stop2(); err != nil {
		t.Fatalf("Run 2: %v", err)
	}
	topic = checkStored(t, db, r, 1)
	dups := 0
	for _, n := range keyCounts(topic) {
		dups += n - 1
	}
	if dups > int(total)-start {
		t.Errorf("duplicates after restart: got %d, want at most the resume window %d", dups, int(total)-start)
	}
}

// cutting wraps a replay so every connection ends after a random time.
func cutting(r *replay.Server, seed uint64) (http.Handler, func() []string) {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 1))
	var ids []string
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		d := time.Duration(20+rng.IntN(60)) * time.Millisecond
		ids = append(ids, req.Header.Get("Last-Event-ID"))
		mu.Unlock()
		ctx, cancel := context.WithTimeout(req.Context(), d)
		defer cancel()
		r.ServeHTTP(w, req.WithContext(ctx))
	})
	return h, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), ids...) }
}

func TestReconnectResumesWithLastEventID(t *testing.T) {
	r := replay.New(replay.Config{Seed: 5, Rate: 20000, IDGroup: 2, Rewind: 1, Logger: slog.New(slog.DiscardHandler)})
	r.Loops(replay.Generate(5, 6000), 1)
	r.Violations(10)
	h, headers := cutting(r, 5)
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer r.Close()

	db := tempBroker(t)
	in, stop := runIngest(t, db, Config{URL: srv.URL, Source: "cut", BatchMax: 200, RetryInitial: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	waitFor(t, 60*time.Second, "every event appended", func() bool {
		time.Sleep(50 * time.Millisecond)
		return allStored(db, r)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	s := in.Stats()
	if s.Reconnects < 2 {
		t.Fatalf("reconnects: got %d, want >= 2 (the test cuts every connection)", s.Reconnects)
	}
	hs := headers()
	for i, h := range hs[1:] {
		if h == "" {
			t.Errorf("connection %d sent no Last-Event-ID", i+1)
		}
	}
	// Each reconnect may resend at most IDGroup+Rewind events: resuming at
	// the first event of the stored position, minus Rewind.
	topic := checkStored(t, db, r, len(hs))
	dups := len(topic) - 6000
	if max := (2 + 1) * (len(hs) - 1); dups > max {
		t.Errorf("duplicates: got %d over %d reconnects, want at most %d", dups, len(hs)-1, max)
	}
	t.Logf("%d connections, %d duplicates", len(hs), dups)
}

// TestResumeSurvivesFailedReconnect covers the go-sse trap: its own retry
// drops Last-Event-ID when a reconnect fails before any event arrived, which
// would restart at the live end and lose everything after the stored
// position.
func TestResumeSurvivesFailedReconnect(t *testing.T) {
	r, url := startReplay(t, replay.Config{Seed: 6})
	r.Loops(replay.Generate(6, 500), 1)
	db := tempBroker(t)
	in, stop := runIngest(t, db, Config{URL: url, Source: "s", BatchMax: 100})
	waitFor(t, 30*time.Second, "first run done", func() bool { return in.Stats().Appended == 500 })
	stop()
	stored := in.Stats().Position

	r.Loops(replay.Generate(7, 500), 1)
	var mu sync.Mutex
	var got []string
	failures := 3
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		got = append(got, req.Header.Get("Last-Event-ID"))
		fail := failures > 0
		failures--
		mu.Unlock()
		if fail {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		r.ServeHTTP(w, req)
	}))
	defer srv.Close()
	in2, stop2 := runIngest(t, db, Config{URL: srv.URL, Source: "s", BatchMax: 100, RetryInitial: time.Millisecond, RetryMax: 5 * time.Millisecond})
	waitFor(t, 30*time.Second, "second run done", func() bool { return in2.Stats().Appended >= 500 })
	stop2()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 {
		t.Fatalf("requests: got %d, want 4 (3 failures, 1 success)", len(got))
	}
	for i, h := range got {
		if h != stored {
			t.Errorf("request %d: Last-Event-ID %q, want the stored position %q", i, h, stored)
		}
	}
	// Resuming "at or before" the position resends the last stored event.
	topic := checkStored(t, db, r, 1)
	if got, want := len(topic), 1000+1; got != want {
		t.Errorf("topic records: got %d, want %d (1000 events + 1 from the resume window)", got, want)
	}
}

func TestShutdownAppendsPendingBatch(t *testing.T) {
	r, url := startReplay(t, replay.Config{Seed: 8})
	r.Loops(replay.Generate(8, 700), 1)
	db := tempBroker(t)
	// Batches never fill or expire: only the shutdown flush stores them.
	in, stop := runIngest(t, db, Config{URL: url, Source: "s", BatchMax: 1_000_000, BatchDelay: time.Hour})
	waitFor(t, 30*time.Second, "all events received", func() bool { return in.Stats().Seen == 700 })
	if got := in.Stats().Batches; got != 0 {
		t.Fatalf("batches before shutdown: got %d, want 0", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := in.Stats().Appended; got != 700 {
		t.Fatalf("appended after shutdown: got %d, want 700", got)
	}
	checkStored(t, db, r, 0)
}

// failingLog fails every Append.
type failingLog struct {
	broker.Log
}

var errDiskFull = errors.New("disk full")

func (failingLog) Append(context.Context, broker.Batch) ([]broker.Position, error) {
	return nil, errDiskFull
}

func TestBrokerFailureStopsRun(t *testing.T) {
	r, url := startReplay(t, replay.Config{Seed: 9})
	r.Loops(replay.Generate(9, 50), 1)
	in, err := New(failingLog{tempBroker(t)}, Config{URL: url, Logger: slog.New(slog.DiscardHandler), BatchMax: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = in.Run(ctx)
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Run: got %v, want an error wrapping %v", err, errDiskFull)
	}
	if ctx.Err() != nil {
		t.Fatal("Run returned only after the test deadline")
	}
}

func TestSinceOnFirstStartOnly(t *testing.T) {
	r := replay.New(replay.Config{Seed: 10, Logger: slog.New(slog.DiscardHandler)})
	r.Loops(replay.Generate(10, 100), 1)
	time.Sleep(5 * time.Millisecond)
	since := time.Now()
	time.Sleep(5 * time.Millisecond)
	r.Loops(replay.Generate(11, 100), 1)
	var mu sync.Mutex
	var queries, agents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		queries = append(queries, req.URL.RawQuery)
		agents = append(agents, req.Header.Get("User-Agent"))
		mu.Unlock()
		r.ServeHTTP(w, req)
	}))
	defer srv.Close()
	defer r.Close()

	db := tempBroker(t)
	in, stop := runIngest(t, db, Config{URL: srv.URL, Source: "s", Since: since})
	waitFor(t, 30*time.Second, "events after since", func() bool { return in.Stats().Appended == 100 })
	stop()
	topic := keyCounts(readTopic(t, db, DefaultTopic))
	for _, e := range r.Events(0) {
		if in := topic[e.MetaID] > 0; in != (e.Index >= 100) {
			t.Fatalf("event %d stored=%v, want stored only from index 100 (since)", e.Index, in)
		}
	}
	// A second start has a position: since is not sent again.
	in2, stop2 := runIngest(t, db, Config{URL: srv.URL, Source: "s", Since: since, UserAgent: "test-agent/1 (ops@example.org)"})
	waitFor(t, 30*time.Second, "second start connected", func() bool { return in2.Stats().Seen > 0 })
	stop2()
	mu.Lock()
	defer mu.Unlock()
	if !strings.HasPrefix(queries[0], "since=") || strings.Contains(queries[len(queries)-1], "since") {
		t.Fatalf("queries: got %q, want since= on the first start only", queries)
	}
	if got, want := agents[0], DefaultUserAgent; got != want {
		t.Errorf("User-Agent of the first start: got %q, want %q", got, want)
	}
	if got, want := agents[len(agents)-1], "test-agent/1 (ops@example.org)"; got != want {
		t.Errorf("User-Agent of the second start: got %q, want %q", got, want)
	}
}

func TestIdleStreamIsDropped(t *testing.T) {
	// A replay with nothing to send and no heartbeat stalls after ":ok".
	_, url := startReplay(t, replay.Config{Heartbeat: time.Hour})
	db := tempBroker(t)
	in, stop := runIngest(t, db, Config{URL: url, Source: "s", IdleTimeout: 200 * time.Millisecond,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond})
	waitFor(t, 30*time.Second, "two reconnects after idle timeouts", func() bool { return in.Stats().Reconnects >= 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestNewFillsDefaults(t *testing.T) {
	in, err := New(tempBroker(t), Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := in.Config()
	tests := []struct {
		name      string
		got, want any
	}{
		{"URL", c.URL, DefaultURL},
		{"UserAgent", c.UserAgent, DefaultUserAgent},
		{"Source", c.Source, DefaultSource},
		{"Topic", c.Topic, DefaultTopic},
		{"DLQTopic", c.DLQTopic, DefaultDLQTopic},
		{"Partitions", c.Partitions, DefaultPartitions},
		{"BatchMax", c.BatchMax, DefaultBatchMax},
		{"BatchDelay", c.BatchDelay, DefaultBatchDelay},
		{"MaxEventBytes", c.MaxEventBytes, DefaultMaxEventBytes},
		{"BatchMaxBytes", c.BatchMaxBytes, DefaultBatchMaxBytes},
		{"MaxBufferedBytes", c.MaxBufferedBytes, DefaultMaxBufferedBytes},
		{"MaxIDBytes", c.MaxIDBytes, DefaultMaxIDBytes},
		{"RetryAfterMax", c.RetryAfterMax, DefaultRetryAfterMax},
		{"RetryInitial", c.RetryInitial, DefaultRetryInitial},
		{"RetryMax", c.RetryMax, DefaultRetryMax},
		{"IdleTimeout", c.IdleTimeout, DefaultIdleTimeout},
		{"Workers", c.Workers, DefaultWorkers},
		{"MetaKey", MetaKey(c.Source), "ingest/wikimedia/last-event-id"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if c.Logger == nil || c.HTTPTransport == nil {
		t.Error("Logger and HTTPTransport: got nil, want defaults")
	}
	if _, err := New(nil, Config{}); err == nil {
		t.Error("New(nil log): got nil error")
	}
}
