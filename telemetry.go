package main

import (
	"sync"
	"time"

	"lakehouse/internal/observe"
	"lakehouse/stream"
)

// telemetry keeps what the HTTP surface shows beyond what the components
// report on demand: each query's running totals (fed by its batches through
// stream.Config.OnBatch), silver's freshness per minute for the last hour,
// the ingest rate, and the newest warnings and errors. Its methods are safe
// for concurrent use; a batch costs a few map updates.
type telemetry struct {
	started time.Time
	now     func() time.Time

	mu      sync.Mutex
	queries map[string]*queryTotals
	fresh   freshRing  // silver: commit time minus intake, and minus meta.dt
	rate    rateWindow // events seen by ingest, sampled
	logs    *logRing
}

// queryTotals are one query's totals since the process started.
type queryTotals struct {
	Batches     int64                 `json:"batches"`
	RowsIn      int64                 `json:"rows_in"`
	RowsOut     int64                 `json:"rows_out"`
	Skipped     int64                 `json:"rows_skipped"` // not the query's kind of row (silver: not an edit or new page)
	Late        int64                 `json:"rows_late"`
	Duplicates  int64                 `json:"rows_duplicate"`
	Unparseable int64                 `json:"rows_unparseable"`
	Last        stream.Progress       `json:"-"`
	LastAt      time.Time             `json:"last_batch_at,omitzero"`
	CaughtUpAt  time.Time             `json:"caught_up_at,omitzero"` // last time a batch ended with nothing left to read
	Newest      time.Time             `json:"newest,omitzero"`       // newest committed time of the sink's time column
	Freshness   stream.Histogram      `json:"-"`                     // ages of committed rows at commit
	BatchDur    durations             `json:"-"`
	CommitDur   durations             `json:"-"`
	recent      [recentBatches]recent // ring of the newest batches
	recentN     int
}

// recentBatches is how many of a query's newest batches health looks at.
const recentBatches = 300

type recent struct {
	at          time.Time
	candidates  int64 // rows in minus rows skipped
	rowsIn      int64
	rowsOut     int64
	late        int64
	lag         int64
	batchSecond float64
}

func newTelemetry() *telemetry {
	t := &telemetry{started: time.Now(), now: time.Now, queries: map[string]*queryTotals{}, logs: newLogRing(50)}
	t.rate.every = 5 * time.Second
	return t
}

// onBatch records one committed batch of query (stream.Config.OnBatch).
func (t *telemetry) onBatch(query string) func(stream.Progress) {
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
		q.recent[q.recentN%recentBatches] = recent{at: now, candidates: p.RowsIn - p.Stats.Skipped, rowsIn: p.RowsIn, rowsOut: p.RowsOut,
			late: p.Stats.DroppedByWatermark, lag: p.Lag, batchSecond: p.Total.Seconds()}
		q.recentN++
		if query == freshQuery && (p.Intake != nil || p.Latency != nil) {
			t.fresh.add(now, p.Intake, p.Latency)
		}
	}
}

// freshQuery is the query whose output's freshness the dashboard charts.
const freshQuery = "silver"

func (t *telemetry) totals(query string) *queryTotals {
	q := t.queries[query]
	if q == nil {
		q = &queryTotals{}
		t.queries[query] = q
	}
	return q
}

// query returns a copy of query's totals (false: no batch yet).
func (t *telemetry) query(name string) (queryTotals, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q, ok := t.queries[name]
	if !ok {
		return queryTotals{}, false
	}
	return *q, true
}

// wire is the totals as an observation shows them.
func (q *queryTotals) wire() observe.Totals {
	return observe.Totals{Batches: q.Batches, RowsIn: q.RowsIn, RowsOut: q.RowsOut, Skipped: q.Skipped, Late: q.Late,
		Duplicates: q.Duplicates, Unparseable: q.Unparseable, LastAt: q.LastAt, CaughtUpAt: q.CaughtUpAt, Newest: q.Newest,
		BatchSeconds: q.BatchDur.Sum, CommitSeconds: q.CommitDur.Sum}
}

// window sums a query's batches that ended within d of now: their
// candidate rows (input it did not skip) and the rows it dropped as late.
func (q *queryTotals) window(now time.Time, d time.Duration) (batches int, candidates, late int64) {
	for i := 0; i < min(q.recentN, recentBatches); i++ {
		r := q.recent[i]
		if now.Sub(r.at) <= d {
			batches++
			candidates += r.candidates
			late += r.late
		}
	}
	return batches, candidates, late
}

// lagTrend returns the first and last of the query's batches that ended
// within d of now, when the batches span at least d (less one trigger's
// slack), there are three or more, and every one of them left a lag behind
// (ok is false otherwise: the query caught up at least once).
func (q *queryTotals) lagTrend(now time.Time, d time.Duration) (first, last recent, ok bool) {
	n := 0
	for i := 0; i < min(q.recentN, recentBatches); i++ {
		r := q.recent[i]
		if now.Sub(r.at) > d {
			continue
		}
		if r.lag == 0 {
			return first, last, false
		}
		if n == 0 || r.at.Before(first.at) {
			first = r
		}
		if n == 0 || r.at.After(last.at) {
			last = r
		}
		n++
	}
	return first, last, n >= 3 && last.at.Sub(first.at) >= d*3/4
}

// durations is a running count, sum and maximum of durations, plus the
// histogram /metrics exports.
type durations struct {
	Count uint64                          `json:"count"`
	Sum   float64                         `json:"sum_s"`
	Max   float64                         `json:"max_s"`
	hist  [len(durationBounds) + 1]uint64 // per bucket of durationBounds, and one above the last
}

// durationBounds are the buckets, in seconds, of batch and commit durations.
var durationBounds = [...]float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

func (d *durations) observe(sec float64) {
	d.Count++
	d.Sum += sec
	d.Max = max(d.Max, sec)
	i := 0
	for i < len(durationBounds) && sec > durationBounds[i] {
		i++
	}
	d.hist[i]++
}

// buckets returns the cumulative counts per bound (Prometheus style).
func (d *durations) buckets() map[float64]uint64 {
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

// freshSeries returns the minutes of the last hour that saw records,
// oldest first, and the histograms of the whole hour (intake, event).
func (t *telemetry) freshSeries() ([]observe.FreshPoint, stream.Histogram, stream.Histogram) {
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

// observeSeen records ingest's events-seen counter at now.
func (t *telemetry) observeSeen(n int64) {
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

// ingestRate is events/s over the last minute of samples (0: too few).
func (t *telemetry) ingestRate() float64 {
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
