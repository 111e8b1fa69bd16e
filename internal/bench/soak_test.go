package bench

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/observe"
	"lakehouse/table"
	"lakehouse/verify"
)

func TestSlope(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []float64
		want float64
	}{
		{"exact line", []float64{0, 1, 2, 3}, []float64{2, 5, 8, 11}, 3},
		{"flat", []float64{0, 1, 2}, []float64{7, 7, 7}, 0},
		{"noise around a line", []float64{0, 1, 2, 3, 4}, []float64{1, 2.5, 3, 4.5, 5}, 1}, // residuals +-0.5 cancel
		{"falling", []float64{10, 20}, []float64{5, 3}, -0.2},
		{"one point", []float64{1}, []float64{1}, math.NaN()},
		{"no spread in x", []float64{2, 2, 2}, []float64{1, 2, 3}, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := leastSquaresSlope(tc.x, tc.y)
			if math.IsNaN(tc.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("leastSquaresSlope(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	var hundred []float64
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, float64(i))
	}
	for _, tc := range []struct {
		sorted []float64
		q      float64
		want   float64
	}{
		{hundred, 0.50, 50}, {hundred, 0.95, 95}, {hundred, 0.99, 99}, {hundred, 1, 100}, {hundred, 0, 1},
		{[]float64{3}, 0.99, 3},
		{[]float64{1, 2, 3, 4}, 0.5, 2}, // the smallest value with half at or below it
		{nil, 0.5, math.NaN()},
	} {
		got := quantile(tc.sorted, tc.q)
		if math.IsNaN(tc.want) != math.IsNaN(got) || !math.IsNaN(got) && got != tc.want {
			t.Errorf("quantile(%d values, %v) = %v, want %v", len(tc.sorted), tc.q, got, tc.want)
		}
	}
}

// TestSoakSchedule: the rate schedule's event count and the marks (canaries,
// violations) at given times.
func TestSoakSchedule(t *testing.T) {
	cfg := SoakConfig{Rate: 35, Burst: 100, BurstEvery: 5 * time.Minute, BurstLength: 10 * time.Second}
	for _, tc := range []struct {
		t    time.Duration
		want float64
	}{
		{0, 0},
		{time.Second, 35},
		{4*time.Minute + 50*time.Second, 35 * 290},       // just before the first burst
		{4*time.Minute + 55*time.Second, 35*290 + 100*5}, // half way through it
		{5 * time.Minute, 35*290 + 100*10},               // after it
		{10 * time.Minute, 2 * (35*290 + 100*10)},        // two periods
		{10*time.Minute + time.Second, 2*(35*290+100*10) + 35},
	} {
		if got := cfg.Due(tc.t); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("Due(%s) = %v, want %v", tc.t, got, tc.want)
		}
	}
	if got, want := (SoakConfig{Rate: 10, Burst: 10}).Due(time.Minute), 600.0; got != want {
		t.Errorf("Due with no bursts configured: %v, want %v", got, want)
	}
	m := time.Minute
	for _, tc := range []struct {
		t, first time.Duration
		want     int
	}{
		{0, m / 3, 0}, {m/3 - 1, m / 3, 0}, {m / 3, m / 3, 1}, {m, m / 3, 1}, {m + m/3, m / 3, 2},
		{40 * time.Second, m * 2 / 3, 1}, {10 * m, m * 2 / 3, 10},
	} {
		if got := marks(tc.t, m, tc.first); got != tc.want {
			t.Errorf("marks(%s, 1m, first %s) = %d, want %d", tc.t, tc.first, got, tc.want)
		}
	}
}

func view(last int64, snaps ...table.Snapshot) *table.TableView {
	return &table.TableView{LastSequence: last, Snapshots: snaps}
}

func snap(id, seq int64) table.Snapshot { return table.Snapshot{ID: id, Sequence: seq} }

// TestSnapshotTracker: new snapshots are reported once; sequence numbers
// committed and expired between two readings count as missed, once.
func TestSnapshotTracker(t *testing.T) {
	var tr snapshotTracker
	steps := []struct {
		v          *table.TableView
		wantFresh  []int64
		wantMissed int
	}{
		{view(0), nil, 0},
		{view(3, snap(11, 1), snap(12, 2), snap(13, 3)), []int64{11, 12, 13}, 0},
		{view(3, snap(11, 1), snap(12, 2), snap(13, 3)), nil, 0},
		{view(6, snap(13, 3), snap(15, 5), snap(16, 6)), []int64{15, 16}, 1}, // 4 came and went
		{view(9, snap(19, 9)), []int64{19}, 2},                               // 7 and 8
		{view(9, snap(19, 9)), nil, 0},
	}
	for i, s := range steps {
		fresh, missed := tr.observe(s.v)
		var ids []int64
		for _, f := range fresh {
			ids = append(ids, f.ID)
		}
		if len(ids) != len(s.wantFresh) || missed != s.wantMissed {
			t.Fatalf("step %d: fresh %v, missed %d; want %v, %d", i, ids, missed, s.wantFresh, s.wantMissed)
		}
		for j := range ids {
			if ids[j] != s.wantFresh[j] {
				t.Fatalf("step %d: fresh %v, want %v", i, ids, s.wantFresh)
			}
		}
	}
	if tr.missed != 3 {
		t.Errorf("missed in all: %d, want 3", tr.missed)
	}
}

// TestSummarize: the summary's figures from synthetic samples: peaks leave
// out the warm-up, slopes fit the second half of the feeding time, CPU and
// bytes written are differences against the baseline.
func TestSummarize(t *testing.T) {
	const hour = 3600.0
	res := SoakResult{
		Config:             SoakConfig{Warmup: 10 * time.Minute},
		FeedSeconds:        hour,
		DrainSeconds:       5,
		Replay:             replay.Counts{Sent: 126_000, OnTime: 125_900, OnTimeEditNew: 90_000, Violations: 60, Canaries: 40},
		HarnessCPU:         36.05,
		BaselineCPUSeconds: 2,
		BaselineWriteBytes: 1 << 20,
		Expect:             verify.Expect{Messages: 125_900, Silver: 90_000, DLQ: 60},
		Verified:           true,
		Report:             verify.Report{Counts: verify.Counts{Broker: 125_900, Silver: 90_000, SilverDistinct: 90_000, DLQ: 60}},
		fresh:              []float64{3, 1, 2, 4},
	}
	for i := 0; i <= 60; i++ { // a sample a minute for an hour
		el := float64(i) * 60
		rss := int64((200 + el/hour*30) * bytesPerMiB) // +30 MiB/h
		if i == 1 {
			rss = 900 << 20 // a start-up spike inside the warm-up
		}
		res.Samples = append(res.Samples, SoakSample{
			Elapsed: el, Feeding: true, StatusOK: true, Sent: int64(el * 35),
			RSSBytes: rss, AnonBytes: rss / 2,
			Runtime: observe.Runtime{HeapInUseBytes: uint64((100 + el/hour*12) * bytesPerMiB), LiveHeapBytes: 50 << 20, Goroutines: uint64(30 + i%3),
				HeldBytes: uint64((20 + el/hour*8) * bytesPerMiB)},
			CPUSeconds: 2 + el*0.25, // a quarter of a core
			WriteBytes: 1<<20 + int64(el*1000), DataDirBytes: int64(el * 500),
			Tables: tablesAt(i),
		})
	}
	// A drain sample after the feed: in the peaks, not in the slopes.
	res.Samples = append(res.Samples, SoakSample{Elapsed: hour + 5, RSSBytes: 240 << 20, AnonBytes: 1 << 20, Tables: map[string]SoakTableSample{}})
	s := summarize(&res)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	near("peak RSS after warm-up", s.PeakRSSMiB, 240)
	near("RSS slope", s.RSSSlopeMiBPerHour, 30)
	near("heap slope", s.HeapSlopeMiBPerHour, 12)
	near("live heap slope", s.LiveSlopeMiBPerHour, 0)
	near("Go held slope", s.HeldSlopeMiBPerHour, 8)
	near("outside Go slope", s.OutsideGoSlopeMiBPerHour, 30.0/2-8)
	near("mean CPU", s.MeanCPUPercent, 25)
	near("harness CPU", s.HarnessCPUPercent, 1)
	near("mean rate", s.MeanRate, 35)
	near("bytes per event", s.WriteBytesPerEvent, 1000.0/35)
	near("written per day", s.WriteGBPerDay, 1000*86400/1e9)
	near("disk per day", s.DiskGBPerDay, 500*86400/1e9)
	near("freshness p50", s.FreshP50, 2)
	near("freshness p99", s.FreshP99, 4)
	if s.FreshRows != 4 || !s.EverythingInSilver || s.MaxGoroutines != 32 {
		t.Errorf("fresh rows %d, every event in silver %v, max goroutines %d; want 4, true, 32", s.FreshRows, s.EverythingInSilver, s.MaxGoroutines)
	}
	if len(s.Tables) != 2 || s.Tables[0].Table != table.Bronze || s.Tables[0].MaxSnapshots != 60 || s.Tables[0].EndSnapshots != 60 ||
		s.Tables[1].Table != "gold.hot_pages" || s.Tables[1].Missed != 61 || s.MissedSnapshots != 61 {
		t.Errorf("tables: %+v, missed %d", s.Tables, s.MissedSnapshots)
	}
	if s.LargestMetadataTable != table.Bronze || s.LargestMetadataBytes != 60<<10 {
		t.Errorf("largest metadata.json: %d bytes of %s, want %d of %s", s.LargestMetadataBytes, s.LargestMetadataTable, 60<<10, table.Bronze)
	}
	if line := s.Line(); !strings.Contains(line, "every event in silver: yes") || !strings.Contains(line, "RSS +30 MiB/h") {
		t.Errorf("summary line: %s", line)
	}
	// Not every event in silver: a missing row.
	res.Report.Counts.Silver, res.Report.Counts.SilverDistinct = 89_999, 89_999
	if summarize(&res).EverythingInSilver {
		t.Error("a silver row short: still every event in silver")
	}
}

// tablesAt is the table part of synthetic sample i.
func tablesAt(i int) map[string]SoakTableSample {
	return map[string]SoakTableSample{
		table.Bronze:     {Snapshots: i, LargestMetadataBytes: int64(i) << 10},
		"gold.hot_pages": {Snapshots: 1, Missed: 1},
	}
}

func TestParseStatCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "4242 (lake (house) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 567 0 0 20 0 12 0 100 200000000 5000 18446744073709551615"
	got, err := parseStatCPU(line)
	if err != nil || got != 1234+567 {
		t.Fatalf("parseStatCPU = %d, %v; want %d", got, err, 1234+567)
	}
	if _, err := parseStatCPU("4242 (x) S 1 2"); err == nil {
		t.Error("short stat line: no error")
	}
}

// TestQuerySummaries: the halves' means come from the running sums.
func TestQuerySummaries(t *testing.T) {
	smp := func(el float64, n int64, batch, commit float64) SoakSample {
		return SoakSample{Elapsed: el, Feeding: true, StatusOK: true,
			Batches: map[string]observe.QueryStatus{"bronze": {Batches: n, BatchSeconds: batch, CommitSeconds: commit}}}
	}
	got := querySummaries([]SoakSample{smp(10, 10, 0.1, 0.05), smp(50, 50, 0.5, 0.25), smp(90, 90, 1.3, 0.65)}, 50)
	if len(got) != 1 {
		t.Fatalf("got %+v", got)
	}
	q := got[0]
	if q.FirstBatches != 40 || q.SecondBatches != 40 || q.FirstBatchMean != 10 || q.SecondBatchMean != 20 ||
		q.FirstCommitMean != 5 || q.SecondCommitMean != 10 {
		t.Errorf("got %+v, want 40/40 batches, 10/20 ms batches, 5/10 ms commits", q)
	}
	if querySummaries(nil, 50) != nil {
		t.Errorf("no samples: want nil")
	}
}

// TestArgValue: the soak's verifier finds the broker the appliance was
// given in its extra arguments, in each way the flag package accepts it.
func TestArgValue(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--broker", "kafka://a:1"}, "kafka://a:1"},
		{[]string{"--retention", "1h", "-broker=kafka://b:2"}, "kafka://b:2"},
		{[]string{"--broker"}, ""},
		{[]string{"--brokers", "x"}, ""},
	} {
		if got := argValue(tc.args, "broker"); got != tc.want {
			t.Errorf("argValue(%q): got %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestSummarizeObjectStore: an S3 soak's requests are the count's growth
// from the first sample after the warm-up to the last while feeding, per
// event and per day at that window's rate, priced by kind (DELETE free).
func TestSummarizeObjectStore(t *testing.T) {
	res := SoakResult{Config: SoakConfig{Warmup: time.Minute}, FeedSeconds: 600}
	for i := 0; i <= 60; i++ { // a sample every 10 s
		el := float64(i) * 10
		n := int64(el)
		res.Samples = append(res.Samples, SoakSample{Elapsed: el, Feeding: true, StatusOK: true, Sent: int64(el * 35),
			ObjectStore: &table.ObjectStoreRequests{Put: 1000 + 2*n, Get: 500 + 4*n, Head: n, List: 7, Delete: n}})
	}
	// Draining: not in the window.
	res.Samples = append(res.Samples, SoakSample{Elapsed: 610, StatusOK: true, Sent: 21_000,
		ObjectStore: &table.ObjectStoreRequests{Put: 99_999}})
	s := summarize(&res)
	if s.ObjectStore == nil {
		t.Fatal("no object-store summary")
	}
	want := table.ObjectStoreRequests{Put: 1080, Get: 2160, Head: 540, List: 0, Delete: 540}
	if *s.ObjectStore != want || s.ObjectStoreSeconds != 540 || s.ObjectStoreEvents != 540*35 {
		t.Fatalf("window: %+v over %v s and %d events; want %+v over 540 s and %d", *s.ObjectStore, s.ObjectStoreSeconds, s.ObjectStoreEvents, want, 540*35)
	}
	perSec := 2.0 + 4 + 1 + 1
	if math.Abs(s.RequestsPerDay-perSec*86400) > 1e-6 || math.Abs(s.RequestsPerEvent-perSec/35) > 1e-9 {
		t.Errorf("per day %v, per event %v; want %v, %v", s.RequestsPerDay, s.RequestsPerEvent, perSec*86400, perSec/35)
	}
	usd := (2*0.005 + (4+1)*0.0004) / 1000 * 86400
	if math.Abs(s.RequestUSDPerDay-usd) > 1e-9 {
		t.Errorf("USD per day %v, want %v", s.RequestUSDPerDay, usd)
	}
	md := soakMarkdown("soak", SoakReport{SoakResult: SoakResult{Config: SoakConfig{S3: true}, Summary: s}})
	for _, w := range []string{"## Object-store requests", "| **all** |", "0.005 USD per 1,000", table.S3PricesAsOf} {
		if !strings.Contains(md, w) {
			t.Errorf("the report lacks %q:\n%s", w, md)
		}
	}
	if strings.Contains(md, "## Tables") {
		t.Errorf("an S3 soak's report has a tables section, which it cannot have sampled:\n%s", md)
	}
	// A local soak counts nothing and says nothing about it.
	for i := range res.Samples {
		res.Samples[i].ObjectStore = nil
	}
	if s := summarize(&res); s.ObjectStore != nil || strings.Contains(soakMarkdown("soak", SoakReport{SoakResult: SoakResult{Summary: s}}), "Object-store") {
		t.Errorf("a soak without counts has an object-store summary: %+v", s.ObjectStore)
	}
}

// TestWriteSoakReportSummary: the report's JSON is the summary without the
// samples (a committed report stays kilobytes); the chart and the markdown
// are still drawn from every sample.
func TestWriteSoakReportSummary(t *testing.T) {
	res := SoakResult{Config: SoakConfig{Warmup: time.Minute}, FeedSeconds: 600}
	for i := 0; i <= 60; i++ {
		res.Samples = append(res.Samples, SoakSample{Elapsed: float64(i) * 10, Feeding: true, StatusOK: true,
			Sent: int64(i) * 350, RSSBytes: 100 << 20, AnonBytes: 40 << 20, CPUPercent: 4})
	}
	res.Summary = summarize(&res)
	dir := t.TempDir()
	if err := WriteSoakReport(dir, "soak", SoakReport{Command: "test", Machine: "here", SoakResult: res}); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, "soak.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(js, &keys); err != nil {
		t.Fatal(err)
	}
	if _, ok := keys["samples"]; ok {
		t.Errorf("soak.json holds the samples")
	}
	var rep SoakReport
	if err := json.Unmarshal(js, &rep); err != nil || rep.Summary.Samples != len(res.Samples) || rep.Command != "test" {
		t.Errorf("soak.json: summary of %d samples, command %q (%v); want %d, test", rep.Summary.Samples, rep.Command, err, len(res.Samples))
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "soak.svg"))
	md, _ := os.ReadFile(filepath.Join(dir, "soak.md"))
	if !strings.Contains(string(svg), "<polyline") || !strings.Contains(string(md), "| 10m0s |") {
		t.Errorf("the chart or the markdown lacks the samples:\n%s\n%s", svg, md)
	}
}
