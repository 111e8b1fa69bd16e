package metrics

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"lakehouse/internal/httpbound"
	"lakehouse/internal/observe"
	"lakehouse/internal/telemetry"
	"lakehouse/stream"
)

type fakeSource struct {
	o   observe.Observation
	tot map[string]telemetry.Totals
}

func (f fakeSource) Observe(context.Context) observe.Observation { return f.o }
func (f fakeSource) Totals(q string) (telemetry.Totals, bool) {
	t, ok := f.tot[q]
	return t, ok
}
func (f fakeSource) Conns() *httpbound.Limiter { return nil }

// TestScrapeReadsOneObservation: a scrape renders the observation's
// figures under their names and labels, the histograms from the query's
// totals, and leaves out what is not measured (the disk's growth before
// it is, the connections before the surface serves).
func TestScrapeReadsOneObservation(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	tel := telemetry.New()
	tel.OnBatch(stream.BronzeQuery)(stream.Progress{RowsIn: 10, RowsOut: 10, Total: 20 * time.Millisecond, Commit: 5 * time.Millisecond})
	bronze, _ := tel.Query(stream.BronzeQuery)
	src := fakeSource{o: observe.Observation{At: now, Version: "v1", Health: observe.Health{Ready: true},
		Topics:  []observe.Topic{{Name: "recentchange", Records: 42}},
		Queries: []observe.Query{{Name: stream.BronzeQuery, Batch: 3, Lag: 7, Totals: bronze.Wire()}},
		Disk:    &observe.Disk{Free: 1 << 30, Reserve: 1 << 20, GrowthDay: observe.Float(math.NaN()), DaysLeft: observe.Float(math.NaN())}},
		tot: map[string]telemetry.Totals{stream.BronzeQuery: bronze}}
	fams, err := NewRegistry(src).Gather()
	if err != nil {
		t.Fatal(err)
	}
	// series is the value of each series of family name, by its labels.
	series := func(name string) map[string]float64 {
		out := map[string]float64{}
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
				out[strings.Join(labels, ",")] = v
			}
		}
		return out
	}
	for name, want := range map[string]map[string]float64{
		"lakehouse_broker_records":               {"topic=recentchange": 42},
		"lakehouse_query_lag_records":            {"query=bronze": 7},
		"lakehouse_query_last_batch_id":          {"query=bronze": 3},
		"lakehouse_ready":                        {"": 1},
		"lakehouse_query_batch_duration_seconds": {"query=bronze": 1}, // one batch observed
		"lakehouse_disk_free_bytes":              {"": 1 << 30},
		"lakehouse_disk_growth_per_day_bytes":    {}, // not measured yet
		"lakehouse_http_connections":             {}, // not serving
	} {
		got := series(name)
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
			continue
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s{%s} = %v, want %v", name, k, got[k], v)
			}
		}
	}
}
