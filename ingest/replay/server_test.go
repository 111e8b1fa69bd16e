package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"lakehouse/ingest"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

func startReplay(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r := New(cfg)
	url, err := r.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, url
}

// readEvents connects with the given Last-Event-ID (and query) and returns
// the first n events.
func readEvents(t *testing.T, url, lastEventID string, n int) []sse.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status: got %d, want 200", res.StatusCode)
	}
	var out []sse.Event
	for ev, err := range sse.Read(res.Body, &sse.ReadConfig{MaxEventSize: 1 << 20}) {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		out = append(out, ev)
		if len(out) == n {
			break
		}
	}
	return out
}

func metaIDOfData(t *testing.T, data string) string {
	t.Helper()
	var m struct {
		Meta struct {
			ID string `json:"id"`
		} `json:"meta"`
	}
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return m.Meta.ID
}

func TestReplayWireFormat(t *testing.T) {
	rec := Sample()
	r, url := startReplay(t, Config{Seed: 1})
	r.Loops(rec, 1)

	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type: got %q, want text/event-stream", ct)
	}
	br := bufio.NewReader(res.Body)
	var lines []string
	for len(lines) < 6 {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimRight(l, "\n"))
	}
	want := []string{
		":ok", "",
		"event: message",
		`id: [{"topic":"replay.mediawiki.recentchange","partition":0,"offset":0}]`,
		"data: " + string(rec.Events[0]),
		"",
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: got %.120q, want %.120q", i, lines[i], want[i])
		}
	}
}

func TestReplayResumeAtOrBefore(t *testing.T) {
	tests := []struct {
		group, rewind int
		after         bool
		lastPos       int64
		wantIndex     int
	}{
		{1, 0, false, 10, 10},
		{1, 3, false, 10, 7},
		{4, 0, false, 5, 20},
		{4, 2, false, 5, 18},
		{4, 50, false, 5, 0},
		{1, 0, true, 10, 11}, // ResumeAfter: exactly after the named event
		{4, 0, true, 5, 24},
		{1, 3, true, 10, 8},
	}
	rec := Generate(9, 60)
	for _, tc := range tests {
		t.Run(fmt.Sprintf("group%d-rewind%d-after%v-pos%d", tc.group, tc.rewind, tc.after, tc.lastPos), func(t *testing.T) {
			r, url := startReplay(t, Config{Seed: 1, IDGroup: tc.group, Rewind: tc.rewind, ResumeAfter: tc.after})
			r.Loops(rec, 1)
			id := fmt.Sprintf(`[{"topic":"%s","partition":0,"offset":%d}]`, DefaultTopic, tc.lastPos)
			evs := readEvents(t, url, id, 1)
			all := r.Events(0)
			if got, want := metaIDOfData(t, evs[0].Data), all[tc.wantIndex].MetaID; got != want {
				t.Errorf("first event after resume: got meta.id %s, want %s (index %d)", got, want, tc.wantIndex)
			}
			wantID := fmt.Sprintf(`[{"topic":"%s","partition":0,"offset":%d}]`, DefaultTopic, tc.wantIndex/tc.group)
			if evs[0].LastEventID != wantID {
				t.Errorf("its id: got %s, want %s", evs[0].LastEventID, wantID)
			}
		})
	}
	t.Run("foreign id is a bad request", func(t *testing.T) {
		_, url := startReplay(t, Config{})
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Last-Event-ID", `[{"topic":"eqiad.other","partition":0,"offset":3}]`)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("status: got %d, want 400", res.StatusCode)
		}
	})
}

func TestReplayLoopsResendAndCounts(t *testing.T) {
	rec := Generate(11, 40)
	r, url := startReplay(t, Config{Seed: 77})
	r.Loops(rec, 2)
	if err := r.Resend(1); err != nil {
		t.Fatal(err)
	}
	if err := r.Resend(5); err == nil {
		t.Fatal("Resend of a loop never enqueued: got nil error")
	}
	r.Violations(12)
	r.Late(6, time.Hour)
	r.Canaries(2)
	r.Oversized(1, 5000)

	evs := readEvents(t, url, "", r.Len())
	con, _ := ingest.NewContract()
	var editNew int64
	for i, raw := range rec.Events {
		ev, _ := con.Check(raw)
		if ev.Type == "edit" || ev.Type == "new" {
			editNew++
		}
		if got, want := metaIDOfData(t, evs[i].Data), ev.ID; got != want {
			t.Fatalf("loop 0 event %d: got id %s, want the recorded %s", i, got, want)
		}
		if got, want := metaIDOfData(t, evs[40+i].Data), LoopID(77, 1, ev.ID); got != want {
			t.Fatalf("loop 1 event %d: got id %s, want LoopID %s", i, got, want)
		}
		if got, want := metaIDOfData(t, evs[80+i].Data), LoopID(77, 1, ev.ID); got != want {
			t.Fatalf("resend of loop 1 event %d: got id %s, want %s", i, got, want)
		}
	}
	ids := map[string]bool{}
	var violations, valid int
	for i, e := range evs {
		err := ingest.Validate([]byte(e.Data))
		kind := r.Events(i)[0].Kind
		switch {
		case kind == KindViolation && err == nil:
			t.Errorf("event %d (violation) passes the contract", i)
		case kind == KindViolation:
			violations++
		case err != nil:
			t.Errorf("event %d (%s) fails the contract: %v", i, kind, err)
		default:
			valid++
			ids[metaIDOfData(t, e.Data)] = true
		}
	}
	c := r.Counts()
	want := Counts{Events: 80 + 40 + 12 + 6 + 2 + 1, Loops: 2, OnTime: 80, OnTimeEditNew: 2 * editNew,
		Resent: 40, Violations: 12, Late: 6, LateEditNew: c.LateEditNew, Canaries: 2, Oversized: 1,
		Sent: c.Sent, Connections: 1}
	if c != want {
		t.Errorf("counts: got %+v, want %+v", c, want)
	}
	if c.Sent < c.Events {
		t.Errorf("sent: got %d, want >= %d", c.Sent, c.Events)
	}
	if got, want := len(ids), 80+6+2+1; got != want {
		t.Errorf("unique valid ids: got %d, want %d", got, want)
	}
	if violations != 12 {
		t.Errorf("violations read: got %d, want 12", violations)
	}
}

func TestReplayRestamp(t *testing.T) {
	rec := Generate(12, 5)
	r, url := startReplay(t, Config{Seed: 1, Restamp: true})
	r.Loops(rec, 1)
	r.Late(1, 2*time.Hour)
	before := time.Now()
	first := readEvents(t, url, "", 6)
	second := readEvents(t, url, "", 6)
	for i := range first {
		var m struct {
			Timestamp int64 `json:"timestamp"`
			Meta      struct {
				DT string `json:"dt"`
			} `json:"meta"`
		}
		if err := json.Unmarshal([]byte(first[i].Data), &m); err != nil {
			t.Fatal(err)
		}
		dt, err := time.Parse(time.RFC3339Nano, m.Meta.DT)
		if err != nil {
			t.Fatalf("event %d: meta.dt %q: %v", i, m.Meta.DT, err)
		}
		age := time.Duration(0)
		if i == 5 {
			age = 2 * time.Hour
		}
		if d := dt.Sub(before.Add(-age)); d < -time.Second || d > 10*time.Second {
			t.Errorf("event %d: meta.dt %v, want about %v", i, dt, before.Add(-age))
		}
		if d := dt.Sub(time.Unix(m.Timestamp, 0)); d < 0 || d > 11*time.Second {
			t.Errorf("event %d: meta.dt - timestamp = %v, want the recorded intake delay", i, d)
		}
		if err := ingest.Validate([]byte(first[i].Data)); err != nil {
			t.Errorf("event %d: restamped event fails the contract: %v", i, err)
		}
		if first[i].Data != second[i].Data {
			t.Errorf("event %d: second send differs from the first; a resent stored event must be byte-identical", i)
		}
	}
	if bytes.Equal([]byte(first[0].Data), rec.Events[0]) {
		t.Error("event 0 was not restamped")
	}
}

func TestReplaySince(t *testing.T) {
	r, url := startReplay(t, Config{Seed: 1})
	r.Loops(Generate(1, 10), 1)
	time.Sleep(5 * time.Millisecond)
	mark := time.Now()
	time.Sleep(5 * time.Millisecond)
	r.Loops(Generate(1, 10), 1)
	evs := readEvents(t, fmt.Sprintf("%s?since=%d", url, mark.UnixMilli()+1), "", 1)
	if got, want := metaIDOfData(t, evs[0].Data), r.Events(10)[0].MetaID; got != want {
		t.Fatalf("first event after since: got %s, want %s (index 10)", got, want)
	}
}

// Backdate spreads the held events over the span before now, in log order,
// the last at about now; a resend keeps the stamps, and late events keep
// their own (send time minus age).
func TestReplayBackdate(t *testing.T) {
	r, url := startReplay(t, Config{Seed: 1, Restamp: true})
	rec := Generate(12, 10)
	r.Loops(rec, 1)
	r.Late(1, 2*time.Hour)
	const span = 6 * time.Hour
	before := time.Now()
	r.Backdate(span)
	first := readEvents(t, url, "", 11)
	second := readEvents(t, url, "", 11)
	var prev time.Time
	for i := range first {
		var m struct {
			Meta struct {
				DT string `json:"dt"`
			} `json:"meta"`
		}
		if err := json.Unmarshal([]byte(first[i].Data), &m); err != nil {
			t.Fatal(err)
		}
		dt, err := time.Parse(time.RFC3339Nano, m.Meta.DT)
		if err != nil {
			t.Fatal(err)
		}
		want := before.Add(-span + span*time.Duration(i+1)/10)
		if i == 10 {
			want = before.Add(-2 * time.Hour)
		} else if i > 0 && !dt.After(prev) {
			t.Errorf("event %d: meta.dt %v not after the previous %v", i, dt, prev)
		}
		if d := dt.Sub(want); d < -time.Second || d > 10*time.Second {
			t.Errorf("event %d: meta.dt %v, want about %v", i, dt, want)
		}
		if err := ingest.Validate([]byte(first[i].Data)); err != nil {
			t.Errorf("event %d: backdated event fails the contract: %v", i, err)
		}
		if first[i].Data != second[i].Data {
			t.Errorf("event %d: second send differs from the first", i)
		}
		prev = dt
	}
}

// TestLogHeldCompactly: the server holds an enqueued event in about 32
// bytes of pointer-free memory (the bench's phases hold millions, in the
// process they measure); as *entry it was 72 bytes and an object the
// collector marked at every cycle.
func TestLogHeldCompactly(t *testing.T) {
	rec := Generate(5, 1000)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	r := New(Config{Seed: 5, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	r.Loops(rec, 1) // the templates
	before := heap()
	r.Loops(rec, 500)
	after := heap()
	per := float64(after-before) / 500_000
	t.Logf("%.1f bytes of live heap per held event", per)
	if per > 40 {
		t.Fatalf("%.1f bytes of live heap per held event, want at most 40", per)
	}
	if got := r.Len(); got != 501_000 {
		t.Fatalf("held %d events, want 501,000", got)
	}
	runtime.KeepAlive(r)
}
