package main

import (
	"bytes"
	"context"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/observe"
	"lakehouse/stream"
	"strings"
	"testing"
	"time"
)

// TestStatusCommand: `lakehouse status` prints a running appliance's
// picture: readiness, the hops, every query and table.
func TestStatusCommand(t *testing.T) {
	// Not restamped: the events keep the recording's times, months old, as
	// the demo's back-dated replay does; the appliance's delay stays small.
	src := replay.New(replay.Config{Seed: 13})
	src.Loops(replay.Generate(13, 300), 1)
	a := startAppliance(t, src, nil)
	a.drained(t, src.Counts().OnTime)
	waitFor(t, 30*time.Second, "readiness", func() bool { return a.p.Readiness().Ready })
	var out, errb bytes.Buffer
	if code := run([]string{"status", "--http", strings.TrimPrefix(a.base, "http://")}, &out, &errb); code != 0 {
		t.Fatalf("status: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{": READY", "pipeline: source 300 -> broker 300", "bronze", "silver", "sessions",
		"bronze.recentchange", "silver.edits", "freshness of silver.edits: intake to commit p50 ", "event time: newest row "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}
	if f := a.observation(t).Fresh; !(float64(f.HourP95) < 600 && float64(f.NowS) > 86400) {
		t.Errorf("freshness: intake to commit p95 %v s, newest event %v s old; want the appliance's delay (under 600 s) apart from the events' age (over a day)",
			f.HourP95, f.NowS)
	}
	out.Reset()
	if code := run([]string{"status", "--http", "127.0.0.1:1"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no appliance answering") {
		t.Errorf("status against nothing: exit %d, stderr %q", code, errb.String())
	}
}

// TestStatusIsTheObservationsProjection: /status and /api/status are one
// model. On a drained appliance (nothing moving) /status holds exactly
// the topics and queries /api/status shows, with the same counts, batches
// and lags, through the observe client the kill test and the soak use;
// ?query= limits it to the named queries.
func TestStatusIsTheObservationsProjection(t *testing.T) {
	src := replay.New(replay.Config{Seed: 17})
	src.Loops(replay.Generate(17, 200), 1)
	a := startAppliance(t, src, nil)
	a.drained(t, src.Counts().OnTime)
	o := a.observation(t)
	st, err := observe.FetchStatus(context.Background(), a.base)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Topics) == 0 || len(st.Topics) != len(o.Topics) {
		t.Fatalf("topics: /status %v, /api/status %+v", st.Topics, o.Topics)
	}
	for _, tp := range o.Topics {
		if st.Topics[tp.Name] != tp.Records || st.Appended[tp.Name] != tp.Appended || tp.Appended < tp.Records {
			t.Errorf("topic %s: /status holds %d of %d stored, /api/status %d of %d", tp.Name,
				st.Topics[tp.Name], st.Appended[tp.Name], tp.Records, tp.Appended)
		}
	}
	if st.Stored(ingest.DefaultTopic) != src.Counts().OnTime {
		t.Errorf("stored %d, want the %d on-time events the source sent", st.Stored(ingest.DefaultTopic), src.Counts().OnTime)
	}
	if len(o.Queries) < 3 || len(st.Queries) != len(o.Queries) {
		t.Fatalf("queries: /status %v, /api/status %+v", st.Queries, o.Queries)
	}
	for _, q := range o.Queries {
		want := observe.QueryStatus{Batch: q.Batch, Lag: q.Lag, QueryID: q.QueryID, Error: q.Error, Batches: q.Totals.Batches,
			BatchSeconds: q.Totals.BatchSeconds, CommitSeconds: q.Totals.CommitSeconds}
		if got := st.Queries[q.Name]; got.Batch != want.Batch || got.Lag != want.Lag || got.QueryID != want.QueryID ||
			got.Error != want.Error || got.Batches != want.Batches || (q.Name == stream.BronzeQuery && q.Totals.Batches == 0) {
			t.Errorf("query %s: /status %+v, /api/status %+v", q.Name, got, want)
		}
	}
	one, err := observe.FetchStatus(context.Background(), a.base, stream.BronzeQuery)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := one.Queries[stream.BronzeQuery]; !ok || len(one.Queries) != 1 {
		t.Errorf("?query=bronze: got queries %v, want bronze alone", one.Queries)
	}
}
