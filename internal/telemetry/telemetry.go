// Package telemetry keeps what the appliance counts about itself since it
// started, beyond what its components report on demand: each query's
// running totals and newest batches (fed through stream.Config.OnBatch),
// silver's freshness per minute for the last hour, the ingest rate, and
// the newest warnings and errors logged (NewLogger builds the logger that
// keeps them). The appliance's observation, readiness and /metrics read it.
//
// What survives a crash: nothing; every figure counts from the start.
package telemetry

import (
	"sync"
	"time"

	"lakehouse/internal/observe"
	"lakehouse/stream"
)

// Telemetry keeps what the HTTP surface shows beyond what the components
// report on demand: each query's running totals (fed by its batches through
// stream.Config.OnBatch), silver's freshness per minute for the last hour,
// the ingest rate, and the newest warnings and errors. Its methods are safe
// for concurrent use; a batch costs a few map updates.
type Telemetry struct {
	Started time.Time // when the process started
	now     func() time.Time

	mu      sync.Mutex
	queries map[string]*Totals
	fresh   freshRing  // silver: commit time minus intake, and minus meta.dt
	rate    rateWindow // events seen by ingest, sampled
	Logs    *LogRing   // the warnings and errors logged (New makes one; a logger's RingHandler may share its own)
}

// Totals are one query's totals since the process started: the counters
// an observation shows (observe.Totals; Wire fills its second sums from
// the durations), and what readiness and /metrics read beside them.
type Totals struct {
	observe.Totals
	Last      stream.Progress  // the newest batch
	Freshness stream.Histogram // ages of committed rows at commit
	BatchDur  Durations
	CommitDur Durations
	recent    [recentBatches]Batch // ring of the newest batches
	recentN   int
}

// recentBatches is how many of a query's newest batches a Totals keeps.
const recentBatches = 300

// Batch is one of a query's newest batches.
type Batch struct {
	At          time.Time
	Candidates  int64 // rows in minus rows skipped
	RowsIn      int64
	RowsOut     int64
	Late        int64
	Lag         int64 // what it left behind
	BatchSecond float64
}

// Record adds b to the newest batches, dropping the oldest beyond the
// ring's size.
func (q *Totals) Record(b Batch) {
	q.recent[q.recentN%recentBatches] = b
	q.recentN++
}

// New starts counting now.
func New() *Telemetry {
	t := &Telemetry{Started: time.Now(), now: time.Now, queries: map[string]*Totals{}, Logs: NewLogRing(50)}
	t.rate.every = 5 * time.Second
	return t
}

// OnBatch records one committed batch of query (stream.Config.OnBatch).
func (t *Telemetry) OnBatch(query string) func(stream.Progress) {
	return func(p stream.Progress) {
		t.mu.Lock()
		defer t.mu.Unlock()
		q := t.totals(query)
		now := t.now()
		q.Batches++
		q.RowsIn += p.RowsIn
		q.RowsOut += p.RowsOut
		q.Skipped += p.Stats.Skipped
		q.Late += p.Stats.DroppedByWatermark
		q.Duplicates += p.Stats.Duplicates
		q.Unparseable += p.Stats.Unparseable
		q.Last, q.LastAt = p, now
		if p.Lag == 0 {
			q.CaughtUpAt = now
		}
		if p.Newest.After(q.Newest) {
			q.Newest = p.Newest
		}
		q.Freshness.Add(p.Latency)
		q.BatchDur.observe(p.Total.Seconds())
		q.CommitDur.observe(p.Commit.Seconds())
		q.Record(Batch{At: now, Candidates: p.RowsIn - p.Stats.Skipped, RowsIn: p.RowsIn, RowsOut: p.RowsOut,
			Late: p.Stats.DroppedByWatermark, Lag: p.Lag, BatchSecond: p.Total.Seconds()})
		if query == FreshQuery && (p.Intake != nil || p.Latency != nil) {
			t.fresh.add(now, p.Intake, p.Latency)
		}
	}
}

// FreshQuery is the query whose output's freshness the dashboard charts.
const FreshQuery = "silver"

func (t *Telemetry) totals(query string) *Totals {
	q := t.queries[query]
	if q == nil {
		q = &Totals{}
		t.queries[query] = q
	}
	return q
}

// Query returns a copy of query's totals (false: no batch yet).
func (t *Telemetry) Query(name string) (Totals, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q, ok := t.queries[name]
	if !ok {
		return Totals{}, false
	}
	return *q, true
}

// Wire is the totals as an observation shows them.
func (q *Totals) Wire() observe.Totals {
	w := q.Totals
	w.BatchSeconds, w.CommitSeconds = q.BatchDur.Sum, q.CommitDur.Sum
	return w
}

// Window sums a query's batches that ended within d of now: their
// candidate rows (input it did not skip) and the rows it dropped as late.
func (q *Totals) Window(now time.Time, d time.Duration) (batches int, candidates, late int64) {
	for i := 0; i < min(q.recentN, recentBatches); i++ {
		r := q.recent[i]
		if now.Sub(r.At) <= d {
			batches++
			candidates += r.Candidates
			late += r.Late
		}
	}
	return batches, candidates, late
}

// LagTrend returns the first and last of the query's batches that ended
// within d of now, when the batches span at least d (less one trigger's
// slack), there are three or more, and every one of them left a lag behind
// (ok is false otherwise: the query caught up at least once).
func (q *Totals) LagTrend(now time.Time, d time.Duration) (first, last Batch, ok bool) {
	n := 0
	for i := 0; i < min(q.recentN, recentBatches); i++ {
		r := q.recent[i]
		if now.Sub(r.At) > d {
			continue
		}
		if r.Lag == 0 {
			return first, last, false
		}
		if n == 0 || r.At.Before(first.At) {
			first = r
		}
		if n == 0 || r.At.After(last.At) {
			last = r
		}
		n++
	}
	return first, last, n >= 3 && last.At.Sub(first.At) >= d*3/4
}

// Durations is a running count, sum and maximum of durations, plus the
// histogram /metrics exports.
type Durations struct {
	Count uint64                          `json:"count"`
	Sum   float64                         `json:"sum_s"`
	Max   float64                         `json:"max_s"`
	hist  [len(durationBounds) + 1]uint64 // per bucket of durationBounds, and one above the last
}

// durationBounds are the buckets, in seconds, of batch and commit durations.
var durationBounds = [...]float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

func (d *Durations) observe(sec float64) {
	d.Count++
	d.Sum += sec
	d.Max = max(d.Max, sec)
	i := 0
	for i < len(durationBounds) && sec > durationBounds[i] {
		i++
	}
	d.hist[i]++
}

// Buckets returns the cumulative counts per bound (Prometheus style).
func (d *Durations) Buckets() map[float64]uint64 {
	out := make(map[float64]uint64, len(durationBounds))
	var cum uint64
	for i, b := range durationBounds {
		cum += d.hist[i]
		out[b] = cum
	}
	return out
}

// freshRing holds two histograms per minute for the last hour: the
// appliance's delay (commit time minus the broker's append time of each
// bronze record silver read) and the events' age (commit time minus each
// silver row's meta.dt). The first is what the appliance controls; the
// second also holds Wikimedia's delay, and a replay's back-dating.
type freshRing struct {
	minutes [60]freshMinute
}

type freshMinute struct {
	start  time.Time // the minute (truncated); zero: unused
	intake stream.Histogram
	event  stream.Histogram
}

func (r *freshRing) add(now time.Time, intake, event *stream.Histogram) {
	m := now.Truncate(time.Minute)
	slot := &r.minutes[m.Unix()/60%60]
	if !slot.start.Equal(m) {
		*slot = freshMinute{start: m}
	}
	slot.intake.Add(intake)
	slot.event.Add(event)
}

// FreshSeries returns the minutes of the last hour that saw records,
// oldest first, and the histograms of the whole hour (intake, event).
func (t *Telemetry) FreshSeries() ([]observe.FreshPoint, stream.Histogram, stream.Histogram) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	var out []observe.FreshPoint
	var intake, event stream.Histogram
	for i := 59; i >= 0; i-- {
		m := now.Truncate(time.Minute).Add(-time.Duration(i) * time.Minute)
		slot := &t.fresh.minutes[m.Unix()/60%60]
		if !slot.start.Equal(m) || slot.intake.Count() == 0 {
			continue
		}
		intake.Add(&slot.intake)
		event.Add(&slot.event)
		out = append(out, observe.FreshPoint{Minute: m, Records: slot.intake.Count(), Rows: slot.event.Count(),
			P50: slot.intake.Quantile(0.5), P95: slot.intake.Quantile(0.95), EventP50: observe.Float(slot.event.Quantile(0.5))})
	}
	return out, intake, event
}

// rateWindow samples a growing counter to give its rate over the last minute.
type rateWindow struct {
	every   time.Duration
	samples []rateSample
}

type rateSample struct {
	at time.Time
	n  int64
}

// ObserveSeen records ingest's events-seen counter at now.
func (t *Telemetry) ObserveSeen(n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	s := t.rate.samples
	if len(s) > 0 && now.Sub(s[len(s)-1].at) < t.rate.every {
		return
	}
	s = append(s, rateSample{now, n})
	for len(s) > 2 && now.Sub(s[1].at) > time.Minute {
		s = s[1:]
	}
	t.rate.samples = s
}

// IngestRate is events/s over the last minute of samples (0: too few).
func (t *Telemetry) IngestRate() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.rate.samples
	if len(s) < 2 {
		return 0
	}
	first, last := s[0], s[len(s)-1]
	if d := last.at.Sub(first.at).Seconds(); d > 0 {
		return float64(last.n-first.n) / d
	}
	return 0
}

// Now is the telemetry's clock.
func (t *Telemetry) Now() time.Time { return t.now() }
