package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lakehouse/internal/humanize"
	"lakehouse/table"
)

// SoakSummary is the soak's verdict on the appliance's footprint. Memory
// slopes are least-squares fits over the second half of the feeding time;
// peaks leave out the warm-up.
type SoakSummary struct {
	DurationSeconds float64 `json:"duration_s"` // events were fed this long
	DrainSeconds    float64 `json:"drain_s"`
	WarmupSeconds   float64 `json:"warmup_s"`
	Samples         int     `json:"samples"`
	SampleErrors    int     `json:"sample_errors"` // failed reads within samples

	Events       int64   `json:"events_sent"`   // on the wire, every kind
	StreamEvents int64   `json:"stream_events"` // on-time events of the looped recording
	Violations   int64   `json:"violations"`
	Canaries     int64   `json:"canaries"`
	MeanRate     float64 `json:"mean_rate"` // events sent / feeding time
	PeakRate     float64 `json:"peak_rate"` // most events sent in one second

	PeakRSSMiB          float64 `json:"peak_rss_mib"` // sampled VmRSS after the warm-up
	PeakAnonMiB         float64 `json:"peak_anon_rss_mib"`
	PeakHWMMiB          float64 `json:"peak_hwm_mib"` // VmHWM at the last sample: the peak RSS of the whole run, warm-up and drain included
	RSSSlopeMiBPerHour  float64 `json:"rss_slope_mib_per_h"`
	AnonSlopeMiBPerHour float64 `json:"anon_rss_slope_mib_per_h"`
	HeapSlopeMiBPerHour float64 `json:"heap_in_use_slope_mib_per_h"`
	LiveSlopeMiBPerHour float64 `json:"live_heap_slope_mib_per_h"`
	// HeldSlopeMiBPerHour is the slope of what the Go runtime holds from the
	// OS, OutsideGoSlopeMiBPerHour that of the anonymous RSS outside it (C
	// code and libc); zero when the appliance did not report HeldBytes.
	HeldSlopeMiBPerHour      float64 `json:"go_held_slope_mib_per_h"`
	OutsideGoSlopeMiBPerHour float64 `json:"outside_go_slope_mib_per_h"`
	EndGoroutines            uint64  `json:"end_goroutines"`
	MaxGoroutines            uint64  `json:"max_goroutines"`
	MeanCPUPercent           float64 `json:"mean_cpu_percent"`    // of one core, over the feeding time
	HarnessCPUPercent        float64 `json:"harness_cpu_percent"` // this process (replay server, observer), same unit

	// Queries: each query's mean batch and commit durations in the first
	// and the second half of the feeding.
	Queries []SoakQuerySummary `json:"queries,omitempty"`

	FreshRows int64   `json:"fresh_rows"` // silver rows whose freshness was read
	FreshP50  float64 `json:"fresh_p50_s"`
	FreshP95  float64 `json:"fresh_p95_s"`
	FreshP99  float64 `json:"fresh_p99_s"`
	FreshMax  float64 `json:"fresh_max_s"`

	Tables               []SoakTableSummary `json:"tables"`
	LargestMetadataBytes int64              `json:"largest_metadata_bytes"`
	LargestMetadataTable string             `json:"largest_metadata_table"`
	MissedSnapshots      int                `json:"missed_snapshots"` // committed and expired between two samples

	// ObjectStore (an S3 soak) is the requests the appliance counted from
	// the first sample after the warm-up to the last while feeding, over
	// ObjectStoreSeconds and ObjectStoreEvents; the rates are of the same
	// window: per event, and per day at the soak's rate (the real
	// stream's, bursts included), in requests and in USD at S3 Standard's
	// list prices.
	ObjectStore        *table.ObjectStoreRequests `json:"object_store_requests,omitempty"`
	ObjectStoreSeconds float64                    `json:"object_store_s,omitempty"`
	ObjectStoreEvents  int64                      `json:"object_store_events,omitempty"`
	RequestsPerEvent   float64                    `json:"requests_per_event,omitempty"`
	RequestsPerDay     float64                    `json:"requests_per_day,omitempty"`
	RequestUSDPerDay   float64                    `json:"request_usd_per_day,omitempty"`

	WriteBytes         int64   `json:"write_bytes"` // write_bytes - cancelled_write_bytes while feeding
	WriteBytesPerEvent float64 `json:"write_bytes_per_event"`
	WriteGBPerDay      float64 `json:"write_gb_per_day"` // second half's write rate, per day
	DataDirBytes       int64   `json:"data_dir_bytes"`   // at the end
	DiskGBPerDay       float64 `json:"disk_growth_gb_per_day"`

	Verified           bool     `json:"verified"`
	EverythingInSilver bool     `json:"every_event_in_silver"`
	Silver             int64    `json:"silver"`
	ExpectedSilver     int64    `json:"expected_silver"`
	Broker             int64    `json:"broker"` // messages the broker stored: held at the end plus trimmed by retention
	ExpectedBroker     int64    `json:"expected_broker"`
	DLQ                int64    `json:"dlq"`
	ExpectedDLQ        int64    `json:"expected_dlq"`
	FailedChecks       []string `json:"failed_checks,omitempty"`
}

// SoakTableSummary is one table over the soak.
type SoakTableSummary struct {
	Table                string `json:"table"`
	MaxSnapshots         int    `json:"max_snapshots"`
	EndSnapshots         int    `json:"end_snapshots"`
	MaxDataFiles         int64  `json:"max_data_files"`
	EndDataFiles         int64  `json:"end_data_files"`
	EndMetadataBytes     int64  `json:"end_metadata_bytes"`
	LargestMetadataBytes int64  `json:"largest_metadata_bytes"`
	Missed               int    `json:"missed_snapshots"`
}

// leastSquaresSlope is the least-squares slope of y over x; NaN with fewer than two
// distinct x.
func leastSquaresSlope(x, y []float64) float64 {
	n := float64(len(x))
	if len(x) < 2 || len(x) != len(y) {
		return math.NaN()
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return math.NaN()
	}
	return sxy / sxx
}

// finite maps NaN and infinities to 0 (JSON has no NaN); the summary's
// sample counts say when a figure had nothing to stand on.
func jsonSafe(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

const bytesPerMiB = 1 << 20

func summarize(res *SoakResult) SoakSummary {
	cfg := res.Config
	sum := SoakSummary{
		DurationSeconds: res.FeedSeconds, DrainSeconds: res.DrainSeconds, WarmupSeconds: cfg.Warmup.Seconds(),
		Samples: len(res.Samples), Events: res.Replay.Sent, StreamEvents: res.Replay.OnTime,
		Violations: res.Replay.Violations, Canaries: res.Replay.Canaries, PeakRate: res.PeakRate,
	}
	if sum.DurationSeconds == 0 && len(res.Samples) > 0 { // stopped early
		sum.DurationSeconds = res.Samples[len(res.Samples)-1].Elapsed
	}
	if sum.DurationSeconds > 0 {
		sum.MeanRate = float64(sum.Events) / sum.DurationSeconds
		sum.HarnessCPUPercent = res.HarnessCPU / (sum.DurationSeconds + sum.DrainSeconds) * 100
	}
	// Samples while feeding, and those of its second half.
	var feeding, half []SoakSample
	for _, s := range res.Samples {
		sum.SampleErrors += len(s.Errors)
		if s.Feeding {
			feeding = append(feeding, s)
			if s.Elapsed >= sum.DurationSeconds/2 {
				half = append(half, s)
			}
		}
	}
	summarizePeaks(&sum, res.Samples)
	slope := func(val func(SoakSample) float64, needStatus bool) float64 {
		var x, y []float64
		for _, s := range half {
			if needStatus && !s.StatusOK {
				continue
			}
			x = append(x, s.Elapsed/3600)
			y = append(y, val(s))
		}
		return jsonSafe(leastSquaresSlope(x, y))
	}
	sum.RSSSlopeMiBPerHour = slope(func(s SoakSample) float64 { return float64(s.RSSBytes) / bytesPerMiB }, false)
	sum.AnonSlopeMiBPerHour = slope(func(s SoakSample) float64 { return float64(s.AnonBytes) / bytesPerMiB }, false)
	sum.HeapSlopeMiBPerHour = slope(func(s SoakSample) float64 { return float64(s.Runtime.HeapInUseBytes) / bytesPerMiB }, true)
	sum.LiveSlopeMiBPerHour = slope(func(s SoakSample) float64 { return float64(s.Runtime.LiveHeapBytes) / bytesPerMiB }, true)
	if held := func(s SoakSample) bool { return s.StatusOK && s.Runtime.HeldBytes > 0 }; slices.ContainsFunc(half, held) {
		sum.HeldSlopeMiBPerHour = slope(func(s SoakSample) float64 { return float64(s.Runtime.HeldBytes) / bytesPerMiB }, true)
		sum.OutsideGoSlopeMiBPerHour = slope(func(s SoakSample) float64 { return outsideGoMiB(s) }, true)
	}
	sum.Queries = querySummaries(feeding, sum.DurationSeconds/2)
	if n := len(feeding); n > 0 {
		last := feeding[n-1]
		if last.Elapsed > 0 {
			sum.MeanCPUPercent = (last.CPUSeconds - res.BaselineCPUSeconds) / last.Elapsed * 100
		}
		sum.WriteBytes = last.WriteBytes - last.CancelledWriteBytes - res.BaselineWriteBytes
		if last.Sent > 0 {
			sum.WriteBytesPerEvent = float64(sum.WriteBytes) / float64(last.Sent)
		}
	}
	perHourToDay := 24 / 1e9 // bytes per hour -> GB per day
	sum.WriteGBPerDay = slope(func(s SoakSample) float64 { return float64(s.WriteBytes - s.CancelledWriteBytes) }, false) * perHourToDay
	sum.DiskGBPerDay = slope(func(s SoakSample) float64 { return float64(s.DataDirBytes) }, false) * perHourToDay
	if n := len(res.Samples); n > 0 {
		sum.DataDirBytes = res.Samples[n-1].DataDirBytes
	}

	summarizeFreshness(&sum, res.fresh)
	summarizeTables(&sum, res.Samples)
	summarizeObjectStore(&sum, feeding)
	c := res.Report.Counts
	sum.Verified = res.Verified
	sum.Silver, sum.ExpectedSilver = c.Silver, res.Expect.Silver
	sum.Broker, sum.ExpectedBroker = c.Broker+c.BrokerTrimmed, res.Expect.Messages // what it stored, trimmed or not
	sum.DLQ, sum.ExpectedDLQ = c.DLQ, res.Expect.DLQ
	sum.FailedChecks = res.Report.FailedNames()
	sum.EverythingInSilver = res.Verified && c.Silver == res.Expect.Silver && c.SilverDistinct == res.Expect.Silver
	return sum
}

// summarizeObjectStore fills the object-store figures from the samples
// while feeding that carry a count: the window starts at the first one
// after the warm-up (the appliance's start, creating its tables, is not
// the steady state a day is made of), or the first one at all.
func summarizeObjectStore(sum *SoakSummary, feeding []SoakSample) {
	var counted []SoakSample
	for _, s := range feeding {
		if s.ObjectStore != nil {
			counted = append(counted, s)
		}
	}
	if len(counted) < 2 {
		return
	}
	first, last := counted[0], counted[len(counted)-1]
	for _, s := range counted[:len(counted)-1] {
		if s.Elapsed >= sum.WarmupSeconds {
			first = s
			break
		}
	}
	secs := last.Elapsed - first.Elapsed
	if secs <= 0 {
		return
	}
	d := last.ObjectStore.Sub(*first.ObjectStore)
	sum.ObjectStore, sum.ObjectStoreSeconds, sum.ObjectStoreEvents = &d, secs, last.Sent-first.Sent
	if sum.ObjectStoreEvents > 0 {
		sum.RequestsPerEvent = float64(d.Total()) / float64(sum.ObjectStoreEvents)
	}
	sum.RequestsPerDay = float64(d.Total()) / secs * 86400
	sum.RequestUSDPerDay = d.USD() / secs * 86400
}

// summarizePeaks fills the peak memory (after warm-up, and the high-water
// mark of the whole run) and the goroutine counts.
func summarizePeaks(sum *SoakSummary, samples []SoakSample) {
	for _, s := range samples {
		if s.Elapsed >= sum.WarmupSeconds {
			sum.PeakRSSMiB = max(sum.PeakRSSMiB, float64(s.RSSBytes)/bytesPerMiB)
			sum.PeakAnonMiB = max(sum.PeakAnonMiB, float64(s.AnonBytes)/bytesPerMiB)
		}
		sum.MaxGoroutines = max(sum.MaxGoroutines, s.Runtime.Goroutines)
		sum.PeakHWMMiB = max(sum.PeakHWMMiB, float64(s.HWMBytes)/bytesPerMiB)
	}
	if n := len(samples); n > 0 {
		sum.EndGoroutines = samples[n-1].Runtime.Goroutines
	}
}

// summarizeFreshness fills the freshness quantiles from the rows' ages.
func summarizeFreshness(sum *SoakSummary, ages []float64) {
	fresh := slices.Clone(ages)
	slices.Sort(fresh)
	sum.FreshRows = int64(len(fresh))
	sum.FreshP50, sum.FreshP95, sum.FreshP99 = jsonSafe(quantile(fresh, 0.50)), jsonSafe(quantile(fresh, 0.95)), jsonSafe(quantile(fresh, 0.99))
	if len(fresh) > 0 {
		sum.FreshMax = fresh[len(fresh)-1]
	}
}

// summarizeTables fills each table's most and last snapshots, files and
// metadata size over the samples.
func summarizeTables(sum *SoakSummary, samples []SoakSample) {
	byTable := map[string]*SoakTableSummary{}
	for _, s := range samples {
		for name, t := range s.Tables {
			ts := byTable[name]
			if ts == nil {
				ts = &SoakTableSummary{Table: name}
				byTable[name] = ts
			}
			ts.MaxSnapshots = max(ts.MaxSnapshots, t.Snapshots)
			ts.MaxDataFiles = max(ts.MaxDataFiles, t.DataFiles)
			ts.LargestMetadataBytes = max(ts.LargestMetadataBytes, t.LargestMetadataBytes)
			ts.EndSnapshots, ts.EndDataFiles, ts.EndMetadataBytes = t.Snapshots, t.DataFiles, t.MetadataBytes
			ts.Missed += t.Missed
		}
	}
	for _, ts := range byTable {
		sum.Tables = append(sum.Tables, *ts)
		sum.MissedSnapshots += ts.Missed
		if ts.LargestMetadataBytes > sum.LargestMetadataBytes {
			sum.LargestMetadataBytes, sum.LargestMetadataTable = ts.LargestMetadataBytes, ts.Table
		}
	}
	slices.SortFunc(sum.Tables, func(a, b SoakTableSummary) int { return compareTables(a.Table, b.Table) })
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// Line is the summary in one paragraph.
func (s SoakSummary) Line() string {
	var snaps []string
	for _, t := range s.Tables {
		snaps = append(snaps, fmt.Sprintf("%s %d", t.Table, t.MaxSnapshots))
	}
	silver := "not verified"
	if s.Verified {
		silver = fmt.Sprintf("%s (silver %s of %s, broker %s of %s, DLQ %s of %s)", yes(s.EverythingInSilver),
			humanize.Count(s.Silver), humanize.Count(s.ExpectedSilver), humanize.Count(s.Broker), humanize.Count(s.ExpectedBroker),
			humanize.Count(s.DLQ), humanize.Count(s.ExpectedDLQ))
	}
	s3 := ""
	if s.ObjectStore != nil {
		s3 = fmt.Sprintf("object-store requests %.3f per event, %s per day, %.2f USD per day; ", s.RequestsPerEvent, humanize.Count(int64(s.RequestsPerDay)), s.RequestUSDPerDay)
	}
	return fmt.Sprintf("%s at %.1f ev/s mean (peak %.0f/s), %s events; %speak RSS %.0f MiB (anon %.0f) after %s warm-up, %.0f MiB over the whole run (VmHWM); "+
		"second half: RSS %+.0f MiB/h, anon %+.0f MiB/h, heap in use %+.0f MiB/h, live heap %+.0f MiB/h; CPU %.0f %% of a core; "+
		"freshness p50 %.2f s, p95 %.2f s, p99 %.2f s (%s rows); max snapshots: %s; missed snapshots %d; largest metadata.json %s (%s); "+
		"written %s per event, %.1f GB/day; data dir %s, %+.1f GB/day; every event in silver: %s",
		time.Duration(s.DurationSeconds*float64(time.Second)).Round(time.Second), s.MeanRate, s.PeakRate, humanize.Count(s.Events), s3,
		s.PeakRSSMiB, s.PeakAnonMiB, time.Duration(s.WarmupSeconds*float64(time.Second)), s.PeakHWMMiB,
		s.RSSSlopeMiBPerHour, s.AnonSlopeMiBPerHour, s.HeapSlopeMiBPerHour, s.LiveSlopeMiBPerHour, s.MeanCPUPercent,
		s.FreshP50, s.FreshP95, s.FreshP99, humanize.Count(s.FreshRows), strings.Join(snaps, ", "), s.MissedSnapshots,
		bytesText(s.LargestMetadataBytes), s.LargestMetadataTable,
		bytesText(int64(s.WriteBytesPerEvent)), s.WriteGBPerDay, bytesText(s.DataDirBytes), s.DiskGBPerDay, silver)
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// SoakReport is what WriteSoakReport writes: the result with the command
// that produced it and the machine it ran on.
type SoakReport struct {
	When    time.Time `json:"when"`
	Command string    `json:"command"`
	Machine string    `json:"machine"`
	SoakResult
}

// WriteSoakReport writes <dir>/<name>.json (config, machine, summary,
// the verifier's report: not the samples, which would make a committed
// report megabytes for what the summary and the chart already say),
// <name>.md (with about twenty samples) and <name>.svg (RSS, anonymous RSS
// and CPU over time, drawn from every sample).
func WriteSoakReport(dir, name string, rep SoakReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	summary := rep
	summary.Samples = nil
	js, err := json.MarshalIndent(summary, "", "  ")
	if err != nil {
		return fmt.Errorf("encode soak report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".svg"), []byte(soakSVG(rep.SoakResult)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".md"), []byte(soakMarkdown(name, rep)), 0o644)
}

// soakSVG draws RSS and anonymous RSS (MiB, left axis) and CPU % of one
// core (right axis) over the soak's minutes, with the warm-up and the end
// of feeding marked.
func soakSVG(res SoakResult) string {
	const w, h, left, right, top, bottom = 900, 400, 60, 60, 40, 50
	samples := res.Samples
	maxT, maxMiB, maxCPU := 1.0, 64.0, 100.0
	for _, s := range samples {
		maxT = max(maxT, s.Elapsed/60)
		maxMiB = max(maxMiB, float64(s.RSSBytes)/bytesPerMiB)
		maxCPU = max(maxCPU, s.CPUPercent)
	}
	maxMiB = niceCeil(maxMiB)
	maxCPU = niceCeil(maxCPU)
	plotW, plotH := float64(w-left-right), float64(h-top-bottom)
	x := func(min float64) float64 { return float64(left) + plotW*min/maxT }
	yMiB := func(v float64) float64 { return float64(h-bottom) - plotH*v/maxMiB }
	yCPU := func(v float64) float64 { return float64(h-bottom) - plotH*v/maxCPU }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">Appliance footprint over the soak: RSS and anonymous RSS (MiB, left), CPU %% of one core (right)</text>`+"\n", left)
	for i := 0; i <= 4; i++ {
		v := maxMiB * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%g</text><text x="%d" y="%.1f">%g %%</text>`+"\n",
			left, w-right, yMiB(v), yMiB(v), left-5, yMiB(v)+4, v, w-right+5, yMiB(v)+4, maxCPU*float64(i)/4)
	}
	tickStep := niceCeil(maxT / 8)
	for i := 0; float64(i)*tickStep <= maxT+1e-9; i++ {
		m := float64(i) * tickStep
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#999"/><text x="%.1f" y="%d" text-anchor="middle">%.4g</text>`+"\n",
			x(m), x(m), h-bottom, h-bottom+4, x(m), h-bottom+16, m)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">minutes</text>`+"\n", left+int(plotW/2), h-bottom+32)
	mark := func(min float64, label string) {
		if min <= 0 || min > maxT {
			return
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#aaa" stroke-dasharray="4 3"/><text x="%.1f" y="%d" fill="#777">%s</text>`+"\n",
			x(min), x(min), top, h-bottom, x(min)+3, top+10, label)
	}
	mark(res.Config.Warmup.Minutes(), "warm-up")
	mark(res.FeedSeconds/60, "last event")
	line := func(color string, dash string, val func(SoakSample) float64, y func(float64) float64) {
		if len(samples) == 0 {
			return
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="`, color, dash)
		for _, s := range samples {
			fmt.Fprintf(&b, "%.1f,%.1f ", x(s.Elapsed/60), y(val(s)))
		}
		b.WriteString(`"/>` + "\n")
	}
	line("#08519c", "", func(s SoakSample) float64 { return float64(s.RSSBytes) / bytesPerMiB }, yMiB)
	line("#6baed6", "", func(s SoakSample) float64 { return float64(s.AnonBytes) / bytesPerMiB }, yMiB)
	line("#e6550d", ` stroke-opacity="0.8"`, func(s SoakSample) float64 { return s.CPUPercent }, yCPU)
	for i, l := range []struct{ name, color string }{{"RSS", "#08519c"}, {"anon RSS", "#6baed6"}, {"CPU %", "#e6550d"}} {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", left+10+90*i, top-12, l.color, left+24+90*i, top-3, l.name)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// outsideGoMiB is the anonymous RSS the Go runtime does not hold: C code
// (DuckDB's allocations) and libc.
func outsideGoMiB(s SoakSample) float64 {
	return (float64(s.AnonBytes) - float64(s.Runtime.HeldBytes)) / bytesPerMiB
}
