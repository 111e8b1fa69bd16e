package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest/replay"
	"lakehouse/internal/syncbuf"
)

// replayID is the SSE id the replay server sends for stream position pos.
func replayID(pos int) string {
	return fmt.Sprintf(`[{"topic":"%s","partition":0,"offset":%d}]`, replay.DefaultTopic, pos)
}

// checkLoopEvents checks that every loop event of the replay is in the
// topic exactly once.
func checkLoopEvents(t *testing.T, db broker.Log, r *replay.Server) {
	t.Helper()
	counts := keyCounts(readTopic(t, db, DefaultTopic))
	for _, e := range r.Events(0) {
		if e.Kind == replay.KindLoop && counts[e.MetaID] != 1 {
			t.Errorf("event %d (%s) stored %d times, want once", e.Index, e.MetaID, counts[e.MetaID])
		}
	}
}

// TestFrameTooLargeIsSkipped: one SSE frame over the reader's limit (which
// stopped ingest at every start, `SSE frame too large to read`) is cut:
// what was read of it lands in the DLQ with the reason and its stream
// position, it is counted, every event after it lands in the topic, ingest
// keeps running, and a restart resumes cleanly after it.
func TestFrameTooLargeIsSkipped(t *testing.T) {
	r, url := startReplay(t, replay.Config{Seed: 12, ResumeAfter: true})
	r.Loops(replay.Generate(12, 5), 1)
	r.Oversized(1, 20_000) // > 2 x MaxEventBytes + 4 KiB: the client cannot read it whole
	r.Loops(replay.Generate(13, 5), 1)
	db := tempBroker(t)
	cfg := Config{URL: url, MaxEventBytes: 4096}
	in, stop := runIngest(t, db, cfg)
	waitFor(t, 30*time.Second, "the events around the large frame", func() bool {
		s := in.Stats()
		return s.Appended == 10 && s.DLQ == 1
	})
	s := in.Stats()
	if s.Oversized != 1 || !s.Connected {
		t.Errorf("stats: oversized %d, connected %v; want 1, true", s.Oversized, s.Connected)
	}
	dlq := readTopic(t, db, DefaultDLQTopic)
	if len(dlq) != 1 {
		t.Fatalf("DLQ: got %d records, want 1", len(dlq))
	}
	m := dlq[0]
	if reason := string(m.Header(HeaderReason)); !strings.Contains(reason, ErrFrameTooLarge.Error()) {
		t.Errorf("DLQ reason: got %q, want %q", reason, ErrFrameTooLarge)
	}
	if got, want := string(m.Header(HeaderSourceID)), replayID(5); got != want {
		t.Errorf("DLQ source id: got %q, want the frame's position %q", got, want)
	}
	limit := 2*cfg.MaxEventBytes + 4096
	if !bytes.HasPrefix(m.Value, []byte("{")) || len(m.Value) < limit/2 || len(m.Value) > limit {
		t.Errorf("DLQ value: %d bytes starting %q, want the frame's data up to the %d-byte limit", len(m.Value), m.Value[:min(len(m.Value), 16)], limit)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: got %v, want nil", err)
	}
	if pos, _ := db.Meta(context.Background(), MetaKey(DefaultSource)); string(pos) != replayID(10) {
		t.Errorf("stored position: got %q, want %q", pos, replayID(10))
	}

	// A restart is clean: it resumes after the last event and takes the next.
	r.Loops(replay.Generate(14, 3), 1)
	in2, stop2 := runIngest(t, db, cfg)
	waitFor(t, 30*time.Second, "the events after the restart", func() bool { return in2.Stats().Appended == 3 })
	if err := stop2(); err != nil {
		t.Fatalf("Run after restart: %v", err)
	}
	if s := in2.Stats(); s.DLQ != 0 || s.Oversized != 0 || s.Reconnects != 0 {
		t.Errorf("after restart: %+v, want no DLQ, no oversized frame, no reconnect", s)
	}
	checkLoopEvents(t, db, r)
}

// TestBadIDsNeverStored: SSE ids that are not valid header values (a
// control character) or exceed the id limit (200 KB) are never stored as the
// resume position (one wedged ingest forever: every reconnect failed or got
// 431, also after a restart): the events keep the last good position, the
// ids are counted and logged without their bulk, every event lands, and a
// restart after a bad id connects with the good position before it.
func TestBadIDsNeverStored(t *testing.T) {
	r, url := startReplay(t, replay.Config{Seed: 31, ResumeAfter: true})
	r.Loops(replay.Generate(31, 5), 1)
	r.BadIDs(2, "[\x01]")
	r.Loops(replay.Generate(32, 5), 1)
	r.BadIDs(1, strings.Repeat("9", 200_000)) // the last event: its position is the one stored
	db := tempBroker(t)
	var logs syncbuf.Buffer
	cfg := Config{URL: url, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	in, stop := runIngest(t, db, cfg)
	waitFor(t, 30*time.Second, "every event", func() bool { return in.Stats().Appended == 13 })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if s := in.Stats(); s.BadIDs != 3 || s.Position != replayID(11) {
		t.Errorf("stats: bad ids %d, position %.40q; want 3, %q", s.BadIDs, s.Position, replayID(11))
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if len(l) > 4096 {
			t.Errorf("a log line of %d bytes: %.200s...", len(l), l)
		}
	}
	if !strings.Contains(logs.String(), "SSE id refused") {
		t.Error("no log line says an id was refused")
	}
	pos, _ := db.Meta(context.Background(), MetaKey(DefaultSource))
	if string(pos) != replayID(11) {
		t.Fatalf("stored position %.40q, want %q", pos, replayID(11))
	}
	// The restart resumes after position 11: the bad-id event comes again
	// (at least once), then the new ones.
	r.Loops(replay.Generate(34, 3), 1)
	in2, stop2 := runIngest(t, db, cfg)
	waitFor(t, 30*time.Second, "the events after the restart", func() bool { return in2.Stats().Appended == 4 })
	if err := stop2(); err != nil {
		t.Fatalf("Run after restart: %v", err)
	}
	if s := in2.Stats(); s.Reconnects != 0 || s.LastError != "" || s.BadIDs != 1 {
		t.Errorf("after restart: %d reconnects, last error %q, %d bad ids; want 0, none, 1", s.Reconnects, s.LastError, s.BadIDs)
	}
	checkLoopEvents(t, db, r)
	counts := keyCounts(readTopic(t, db, DefaultTopic))
	for _, e := range r.Events(0) {
		if e.Kind == replay.KindBadID && counts[e.MetaID] == 0 {
			t.Errorf("event %d with a bad id missing from the topic", e.Index)
		}
	}
}

// TestBadIDsKeepEveryBatchPosition: with one event per batch, each batch's
// stored position is a good one, including the batches of events that came
// with a bad id (they carry the position before them).
func TestBadIDsKeepEveryBatchPosition(t *testing.T) {
	r, url := startReplay(t, replay.Config{Seed: 41, ResumeAfter: true})
	r.Loops(replay.Generate(41, 2), 1)
	r.BadIDs(2, "a\x01b")
	r.Loops(replay.Generate(42, 1), 1)
	db := tempBroker(t)
	var positions []string
	var mu sync.Mutex
	cfg := Config{URL: url, BatchMax: 1, Progress: func(s Stats) {
		mu.Lock()
		positions = append(positions, s.Position)
		mu.Unlock()
	}}
	in, stop := runIngest(t, db, cfg)
	waitFor(t, 30*time.Second, "every event", func() bool { return in.Stats().Appended == 5 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{replayID(0), replayID(1), replayID(1), replayID(1), replayID(4)}
	if fmt.Sprint(positions) != fmt.Sprint(want) {
		t.Errorf("positions after each batch:\n got %q\nwant %q", positions, want)
	}
}

// TestRetryAfterHonoured: a 429 or 503 with Retry-After (seconds or an HTTP
// date) delays the next attempt by that much, not by the backoff (here 1
// ms); the reason is in Stats.LastError meanwhile; then every event lands.
func TestRetryAfterHonoured(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	refuse := func(attempt int64, req *http.Request) (int, http.Header) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		switch attempt {
		case 1:
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}}
		case 2:
			return http.StatusServiceUnavailable, http.Header{"Retry-After": {time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)}}
		}
		return 0, nil
	}
	r, url := startReplay(t, replay.Config{Seed: 51, Refuse: refuse})
	r.Loops(replay.Generate(51, 20), 1)
	db := tempBroker(t)
	in, stop := runIngest(t, db, Config{URL: url, RetryInitial: time.Millisecond, RetryMax: time.Millisecond})
	waitFor(t, 30*time.Second, "the 429 in the stats", func() bool { return strings.Contains(in.Stats().LastError, "429") })
	waitFor(t, 60*time.Second, "every event", func() bool { return in.Stats().Appended == 20 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 3 {
		t.Fatalf("attempts: got %d, want 3", len(at))
	}
	// An HTTP date has whole seconds: "now + 3 s" is at least 2 s away.
	for i, least := range []time.Duration{2 * time.Second, 2 * time.Second} {
		if gap := at[i+1].Sub(at[i]); gap < least-100*time.Millisecond {
			t.Errorf("attempt %d came %v after attempt %d, want at least %v (Retry-After)", i+2, gap, i+1, least)
		}
	}
	if s := in.Stats(); s.LastError != "" || s.Reconnects != 2 {
		t.Errorf("stats: last error %q, reconnects %d; want none once connected, 2", s.LastError, s.Reconnects)
	}
}

// TestRetryAfterCapped: a Retry-After beyond RetryAfterMax waits
// RetryAfterMax, not an hour.
func TestRetryAfterCapped(t *testing.T) {
	refuse := func(attempt int64, req *http.Request) (int, http.Header) {
		if attempt == 1 {
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"3600"}}
		}
		return 0, nil
	}
	r, url := startReplay(t, replay.Config{Seed: 52, Refuse: refuse})
	r.Loops(replay.Generate(52, 5), 1)
	in, stop := runIngest(t, tempBroker(t), Config{URL: url, RetryAfterMax: 200 * time.Millisecond})
	waitFor(t, 30*time.Second, "every event", func() bool { return in.Stats().Appended == 5 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{"7", 7 * time.Second},
		{" 30 ", 30 * time.Second},
		{"99999999999999999999", 0}, // not a number Go can hold: ignored
		{"999999999", 24 * time.Hour},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"soon", 0},
	} {
		if got := retryAfter(tc.h, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

// TestStoredBadPositionWaitsForReset: a bad position an earlier version
// stored is never sent; ingest runs without connecting and says why
// (readiness sees it disconnected) until ResetPosition replaces it; then it
// resumes after the position given.
func TestStoredBadPositionWaitsForReset(t *testing.T) {
	var mu sync.Mutex
	var reqs []*http.Request
	record := func(attempt int64, req *http.Request) (int, http.Header) {
		mu.Lock()
		reqs = append(reqs, req.Clone(context.Background()))
		mu.Unlock()
		return 0, nil
	}
	r, url := startReplay(t, replay.Config{Seed: 61, ResumeAfter: true, Refuse: record})
	r.Loops(replay.Generate(61, 10), 1)
	db := tempBroker(t)
	ctx := context.Background()
	for _, name := range []string{DefaultTopic, DefaultDLQTopic} {
		if err := db.CreateTopic(ctx, name, map[string]int{DefaultTopic: DefaultPartitions, DefaultDLQTopic: 1}[name]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Append(ctx, broker.Batch{Meta: []broker.Meta{{Key: MetaKey(DefaultSource), Value: []byte("[\x01]")}}}); err != nil {
		t.Fatal(err)
	}
	in, stop := runIngest(t, db, Config{URL: url})
	waitFor(t, 30*time.Second, "the reason in the stats", func() bool { return strings.Contains(in.Stats().LastError, "reset-position") })
	time.Sleep(200 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatalf("Run: got %v, want nil (it waits, it does not stop the appliance)", err)
	}
	mu.Lock()
	n := len(reqs)
	mu.Unlock()
	if n != 0 || in.Stats().Connected {
		t.Fatalf("with a bad stored position: %d requests, connected %v; want none", n, in.Stats().Connected)
	}

	// Reset rules.
	for _, bad := range []Reset{{}, {To: "a\x01"}, {To: replayID(1), Latest: true}, {To: strings.Repeat("a", DefaultMaxIDBytes+1)}} {
		if _, err := ResetPosition(ctx, db, DefaultSource, bad); err == nil {
			t.Errorf("ResetPosition(%+v): got nil error", bad)
		}
	}
	old, err := ResetPosition(ctx, db, DefaultSource, Reset{To: replayID(3)})
	if err != nil || old != "[\x01]" {
		t.Fatalf("ResetPosition: got %q, %v; want the old position", old, err)
	}
	in2, stop2 := runIngest(t, db, Config{URL: url})
	waitFor(t, 30*time.Second, "the events after position 3", func() bool { return in2.Stats().Appended == 6 })
	if err := stop2(); err != nil {
		t.Fatal(err)
	}

	// --since and --latest clear the position; since rides in the query.
	since := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		reset     Reset
		wantQuery string
	}{
		{Reset{Since: since}, "since=" + strconv.FormatInt(since.UnixMilli(), 10)},
		{Reset{Latest: true}, ""},
	} {
		if _, err := ResetPosition(ctx, db, DefaultSource, tc.reset); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		reqs = nil
		mu.Unlock()
		in, stop := runIngest(t, db, Config{URL: url})
		waitFor(t, 30*time.Second, "a connection", func() bool { return in.Stats().Connected })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		req := reqs[0]
		mu.Unlock()
		if id := req.Header.Get("Last-Event-ID"); id != "" || req.URL.RawQuery != tc.wantQuery {
			t.Errorf("after %+v: Last-Event-ID %q, query %q; want none, %q", tc.reset, id, req.URL.RawQuery, tc.wantQuery)
		}
	}
	if _, err := ResetPosition(ctx, db, DefaultSource, Reset{To: "x\x01"}); !errors.Is(err, ErrBadPosition) {
		t.Errorf("ResetPosition with a bad id: got %v, want ErrBadPosition", err)
	}
}
