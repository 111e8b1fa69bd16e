package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/stream"
	"lakehouse/table"
)

// TestMetrics runs the appliance on a demo-sized replay, then reads
// /metrics with the Prometheus text parser: every family follows
// Prometheus naming (lowercase, counters and only counters end in _total,
// durations and ages in _seconds, sizes in _bytes, an _info build metric,
// only low-cardinality labels, a help text), the Go runtime and process
// collectors are there, and the counters agree with the broker and the
// tables on disk (counted here, not taken from the pipeline).
func TestMetrics(t *testing.T) {
	src := replay.New(replay.Config{Seed: 5, Restamp: true})
	src.Loops(replay.Generate(5, 500), 2)
	src.Violations(3)
	src.Canaries(2)
	a := startAppliance(t, src, nil)
	c := src.Counts()
	a.drained(t, c.OnTime)
	ctx := context.Background()
	if _, err := mustMarts(t, a.p).Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	waitFor(t, 10e9, "the ingest counters to include every event", func() bool { return mustIngest(t, a.p).Stats().Seen == c.Events })

	code, body := a.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	checkNaming(t, fams)
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "lakehouse_build_info"} {
		if fams[name] == nil {
			t.Errorf("family %s missing", name)
		}
	}

	// The source of truth: the broker's offsets and the tables' rows.
	var broker int64
	offs, err := a.p.Broker().Offsets(ctx, ingest.DefaultTopic)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs {
		broker += o.End - o.Start
	}
	rows := func(ident string) int64 {
		recs, err := a.p.Lake().Scan(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, r := range recs {
			n += r.NumRows()
			r.Release()
		}
		return n
	}
	bronze, silver := rows(table.Bronze), rows(table.SilverEdits)
	for _, w := range []struct {
		name   string
		labels map[string]string
		want   int64
	}{
		{"lakehouse_ingest_events_seen_total", nil, c.Events},
		{"lakehouse_ingest_events_appended_total", nil, broker},
		{"lakehouse_ingest_events_dead_lettered_total", nil, c.Violations},
		{"lakehouse_ingest_events_canary_total", nil, c.Canaries},
		{"lakehouse_broker_records", map[string]string{"topic": ingest.DefaultTopic}, broker},
		{"lakehouse_query_rows_in_total", map[string]string{"query": stream.BronzeQuery}, bronze},
		{"lakehouse_query_rows_out_total", map[string]string{"query": stream.BronzeQuery}, bronze},
		{"lakehouse_query_rows_in_total", map[string]string{"query": "silver"}, bronze},
		{"lakehouse_query_rows_out_total", map[string]string{"query": "silver"}, silver},
		{"lakehouse_table_records", map[string]string{"table": table.Bronze}, bronze},
		{"lakehouse_table_records", map[string]string{"table": table.SilverEdits}, silver},
		{"lakehouse_query_lag_records", map[string]string{"query": "silver"}, 0},
		{"lakehouse_asset_check_passed", map[string]string{"check": "silver_unique_event_ids"}, 1},
	} {
		got, ok := value(fams, w.name, w.labels)
		if !ok || int64(got) != w.want {
			t.Errorf("%s%v: got %v (present %v), want %d", w.name, w.labels, got, ok, w.want)
		}
	}
	if bronze != broker || silver == 0 {
		t.Errorf("inconclusive: bronze %d rows for %d broker records, silver %d", bronze, broker, silver)
	}
	if n, ok := value(fams, "lakehouse_query_batch_duration_seconds", map[string]string{"query": "silver"}); !ok || n == 0 {
		t.Errorf("silver's batch-duration histogram is empty (%v, %v)", n, ok)
	}
}

// allowedLabels keeps cardinality low: no ids, offsets or times as labels.
var allowedLabels = map[string]bool{"query": true, "table": true, "topic": true, "partition": true, "check": true,
	"version": true, "goversion": true, "component": true, "method": true}

func checkNaming(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	valid := regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	seen := 0
	for name, f := range fams {
		if !strings.HasPrefix(name, "lakehouse_") {
			continue
		}
		seen++
		if !valid.MatchString(name) {
			t.Errorf("%s: not lowercase snake case", name)
		}
		if f.GetHelp() == "" {
			t.Errorf("%s: no help text", name)
		}
		isCounter := f.GetType() == dto.MetricType_COUNTER
		if isCounter != strings.HasSuffix(name, "_total") {
			t.Errorf("%s: type %s; counters, and only counters, end in _total", name, f.GetType())
		}
		for _, unit := range []struct{ word, suffix string }{{"duration", "_seconds"}, {"age", "_seconds"}, {"freshness", "_seconds"}, {"bytes", "_bytes"}} {
			base := strings.TrimSuffix(name, "_total")
			if strings.Contains(base, unit.word) && !strings.HasSuffix(base, unit.suffix) {
				t.Errorf("%s: a %s, want the base unit suffix %s", name, unit.word, unit.suffix)
			}
		}
		if f.GetType() == dto.MetricType_HISTOGRAM && !strings.HasSuffix(name, "_seconds") {
			t.Errorf("%s: histograms here measure time, want _seconds", name)
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if !allowedLabels[l.GetName()] {
					t.Errorf("%s: label %q is not one of the low-cardinality labels", name, l.GetName())
				}
			}
		}
	}
	if fams["lakehouse_build_info"] == nil {
		t.Errorf("no lakehouse_build_info metric")
	}
	if seen < 20 {
		t.Errorf("only %d lakehouse_ families", seen)
	}
}

// value returns the value (a histogram's count) of the sample of name whose
// labels include labels.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		for k, v := range labels {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}
