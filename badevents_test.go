package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/health"
	"lakehouse/table"
)

// TestBadEventsNeverStopSilver: the events that once passed the contract
// and then stopped or fooled silver (issue 14: a timestamp in 2100, one in
// milliseconds or beyond what microseconds hold, "TIMESTAMP" beside
// "timestamp", 1772120977.0, revision.new 1e20 or 30 digits, namespace
// beyond int32, "Revision" and "Type" keys, an edit without bot or
// server_name, invalid UTF-8, a meta.dt ahead of the broker's clock) each
// land in the DLQ with their reason; every on-time edit sent after them
// lands in silver (none dropped as late: the watermark did not move, none
// unparseable); DuckDB still reads bronze (the asset checks pass); and a
// restart on the same data is clean: new on-time edits land too. The
// dead-letter table holds every dead letter once, before and after the
// restart.
func TestBadEventsNeverStopSilver(t *testing.T) {
	dir := t.TempDir()
	src := replay.New(replay.Config{Seed: 14, Restamp: true, ResumeAfter: true})
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	src.Loops(replay.Generate(14, 300), 1)
	src.Violations(len(replay.ViolationKinds))
	onData := func(f *appliance.Config, _ *health.Rules) { f.Data = dir }
	ctx := context.Background()

	a := startApplianceAt(t, src, url, onData)
	a.drained(t, src.Counts().OnTime)
	// On-time events after every bad one has been through silver: a bad
	// event that had moved the watermark would make them late.
	src.Loops(replay.Generate(15, 300), 1)
	c := src.Counts()
	a.drained(t, c.OnTime)
	checkSilver(t, a, c.OnTimeEditNew)

	dlq := readTopicAll(t, a, ingest.DefaultDLQTopic)
	if got, want := len(dlq), len(replay.ViolationKinds); got != want {
		t.Fatalf("DLQ records: got %d, want %d (one per kind)", got, want)
	}
	var reasons []string
	for _, m := range dlq {
		reasons = append(reasons, string(m.Header(ingest.HeaderReason)))
	}
	all := strings.Join(reasons, "\n")
	for _, want := range []string{
		"at '/timestamp': 4102444800 (2100-01-01T00:00:00Z) is ",
		`at '/TIMESTAMP': key differs from "timestamp" only in case`,
		"000 is after 9999-12-31T23:59:59Z",
		"at '/timestamp': 9007199254740991 is after 9999-12-31T23:59:59Z",
		".0, want an integer written without fraction or exponent",
		"at '/revision/new': got 1e20, want an integer written without fraction or exponent",
		"at '/revision/new': got 123456789012345678901234567890, want an integer from",
		"at '/namespace': got 2147483648, want an integer from -2147483648 to 2147483647",
		`at '/Revision': key differs from "revision" only in case`,
		`at '/Type': key differs from "type" only in case`,
		"missing property 'bot'",
		"missing property 'server_name'",
		"at '/title': invalid UTF-8 in a string",
		"at '/meta/dt': 2100-01-01T00:00:00Z is ",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no DLQ reason contains %q; reasons:\n%s", want, all)
		}
	}
	checkDLQTable(t, a, dlq)
	report, err := mustMarts(t, a.p).Refresh(ctx)
	if err != nil {
		t.Fatalf("marts refresh (DuckDB over bronze and silver): %v", err)
	}
	for _, ch := range report.Checks {
		if !ch.Passed {
			t.Errorf("asset check %s failed: %s", ch.Name, ch.Message)
		}
	}
	a.stop()

	// A restart on the same lake and stream position.
	src.Loops(replay.Generate(16, 300), 1)
	b := startApplianceAt(t, src, url, onData)
	c = src.Counts()
	b.drained(t, c.OnTime)
	checkSilver(t, b, c.OnTimeEditNew)
	dlq = readTopicAll(t, b, ingest.DefaultDLQTopic)
	if got := len(dlq); got != len(replay.ViolationKinds) {
		t.Errorf("DLQ records after the restart: got %d, want %d", got, len(replay.ViolationKinds))
	}
	checkDLQTable(t, b, dlq)
	for name, q := range b.p.Status(ctx).Queries {
		if q.Error != "" {
			t.Errorf("query %s after the restart: %s", name, q.Error)
		}
	}
}

// checkSilver fails t unless silver.edits holds exactly want distinct
// events, none with an event time ahead of now, and this run of silver
// dropped nothing as late and found nothing unparseable.
func checkSilver(t *testing.T, a *testAppliance, want int64) {
	t.Helper()
	var ids int
	var newest time.Time
	waitFor(t, time.Minute, "silver to hold every on-time edit", func() bool {
		ids, newest = silverRows(t, a)
		return ids >= int(want)
	})
	if ids != int(want) {
		t.Errorf("silver.edits distinct ids: got %d, want %d", ids, want)
	}
	if newest.After(time.Now()) {
		t.Errorf("silver's newest event time %s is in the future", newest)
	}
	if q, ok := a.p.Telemetry().Query("silver"); !ok || q.Late != 0 || q.Unparseable != 0 {
		t.Errorf("silver's totals: late %d, unparseable %d (present %v); want 0 and 0", q.Late, q.Unparseable, ok)
	}
}

// silverRows counts the distinct event ids in silver.edits and returns the
// newest event time.
func silverRows(t *testing.T, a *testAppliance) (int, time.Time) {
	t.Helper()
	recs, err := a.p.Lake().Scan(context.Background(), table.SilverEdits)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	var newest time.Time
	for _, r := range recs {
		for i, f := range r.Schema().Fields() {
			switch col := r.Column(i).(type) {
			case *array.String:
				if f.Name == "event_id" {
					for j := 0; j < col.Len(); j++ {
						ids[col.Value(j)] = true
					}
				}
			case *array.Timestamp:
				if f.Name == "event_time" {
					for j := 0; j < col.Len(); j++ {
						if et := time.UnixMicro(int64(col.Value(j))); et.After(newest) {
							newest = et
						}
					}
				}
			}
		}
		r.Release()
	}
	return len(ids), newest
}

// readTopicAll returns every message of topic in the appliance's broker.
func readTopicAll(t *testing.T, a *testAppliance, topic string) []broker.Message {
	t.Helper()
	ctx := context.Background()
	offs, err := a.p.Broker().Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []broker.Message
	for _, p := range offs {
		for from := p.Start; from < p.End; {
			ms, err := a.p.Broker().Read(ctx, topic, p.Partition, from, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) == 0 {
				break
			}
			out = append(out, ms...)
			from = ms[len(ms)-1].Offset + 1
		}
	}
	return out
}
