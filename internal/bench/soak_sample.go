package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/humanize"
	"lakehouse/internal/launch"
	"lakehouse/internal/observe"
	"lakehouse/internal/progress"
	"lakehouse/table"
)

// sampler holds the state between samples.
type sampler struct {
	cfg SoakConfig
	c   *launch.Child
	src *replay.Server
	obs table.Observer
	// noTables: the warehouse is not on local disk (an S3 soak), so the
	// observer has nothing to read.
	noTables bool

	start    time.Time
	selfCPU0 float64
	bar      *progress.Reporter // on a terminal: the feed's, then the drain's (nil: a line per sample)
	prev     procReading
	prevAt   time.Time
	prevSent int64
	tracked  map[string]*snapshotTracker
	samples  []SoakSample
	fresh    []float64
}

// feed enqueues what the rate schedule has due every feedStep, plus the
// canaries and violations, until the duration is over or ctx ends, and
// returns the peak one-second send rate.
func (s *sampler) feed(ctx context.Context, f *replay.Feed) float64 {
	cfg := s.cfg
	tick := time.NewTicker(feedStep)
	defer tick.Stop()
	var enq int64
	var viol, canaries int
	var peak float64
	winAt, winSent := s.start, int64(0)
	for {
		now := time.Now()
		el := min(now.Sub(s.start), cfg.Duration)
		if due := int64(cfg.Due(el)); due > enq {
			f.Next(int(due - enq))
			enq = due
		}
		if n := marks(el, cfg.ViolationEvery, cfg.ViolationEvery/3); n > viol {
			f.Violations(n - viol)
			viol = n
		}
		if n := marks(el, cfg.CanaryEvery, cfg.CanaryEvery*2/3); n > canaries {
			s.src.Canaries(n - canaries)
			canaries = n
		}
		if d := now.Sub(winAt); d >= time.Second {
			sent := s.src.Counts().Sent
			peak = max(peak, float64(sent-winSent)/d.Seconds())
			winAt, winSent = now, sent
		}
		if el >= cfg.Duration {
			return peak
		}
		select {
		case <-ctx.Done():
			return peak
		case <-tick.C:
		}
	}
}

// loop samples every cfg.Sample until the feed is over and the pipeline
// has drained, then takes a last sample.
func (s *sampler) loop(ctx context.Context, fed <-chan float64, res *SoakResult) error {
	tick := time.NewTicker(s.cfg.Sample)
	defer tick.Stop()
	if s.cfg.Progress.Terminal {
		s.bar = s.cfg.Progress.Start(progress.Task{Label: "soak", Duration: s.cfg.Duration})
		defer func() { s.bar.Finish() }()
	}
	var poll <-chan time.Time // drain polling, once the feed is over
	var drainStart time.Time
	var counts replay.Counts
	stable := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.c.Done():
			return fmt.Errorf("soak: the appliance exited during the soak (%v); see %s", s.c.Wait(), s.cfg.LogPath)
		case <-tick.C:
			s.take(ctx, poll == nil)
		case res.PeakRate = <-fed:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			drainStart = time.Now()
			res.FeedSeconds = drainStart.Sub(s.start).Seconds()
			counts = s.src.Counts()
			fed = nil
			p := time.NewTicker(500 * time.Millisecond)
			defer p.Stop()
			poll = p.C
			s.bar.Finish()
			fmt.Fprintf(s.cfg.Out, "soak: fed %s events (%s stream, %d violations, %d canaries) in %.0f s; waiting for the pipeline to drain\n",
				humanize.Count(counts.Events), humanize.Count(counts.OnTime), counts.Violations, counts.Canaries, res.FeedSeconds)
			if s.bar != nil {
				s.bar = s.cfg.Progress.Start(progress.Task{Label: "soak: drain", Total: progress.Unknown})
			}
		case <-poll:
			st, err := observe.FetchStatus(ctx, s.c.Base)
			if err == nil {
				s.bar.SetNote(st.DrainNote(ingest.DefaultTopic, counts.OnTime))
			}
			if err == nil && st.Drained(ingest.DefaultTopic, counts.OnTime) && st.Stored(ingest.DefaultDLQTopic) >= counts.Violations &&
				s.src.Counts().Sent >= counts.Events {
				stable++
			} else {
				stable = 0
			}
			if stable >= 2 {
				res.DrainSeconds = time.Since(drainStart).Seconds()
				s.take(ctx, false) // the last silver snapshots' freshness
				return nil
			}
			if time.Since(drainStart) > s.cfg.DrainTimeout {
				s.take(ctx, false)
				return fmt.Errorf("soak: the pipeline did not drain within %s of the last event (broker %d of %d; %s); see %s",
					s.cfg.DrainTimeout, st.Stored(ingest.DefaultTopic), counts.OnTime, st.Lags(), s.cfg.LogPath)
			}
		}
	}
}

// take records one sample and prints its progress line.
func (s *sampler) take(ctx context.Context, feeding bool) {
	now := time.Now()
	smp := SoakSample{At: now.UTC(), Elapsed: now.Sub(s.start).Seconds(), Feeding: feeding, Tables: map[string]SoakTableSample{}}
	errf := func(format string, a ...any) { smp.Errors = append(smp.Errors, fmt.Sprintf(format, a...)) }

	smp.Sent = s.src.Counts().Sent
	if dt := now.Sub(s.prevAt).Seconds(); dt > 0 {
		smp.Rate = float64(smp.Sent-s.prevSent) / dt
	}
	s.sampleProc(&smp, now, errf)
	s.prevAt, s.prevSent = now, smp.Sent
	s.sampleStatus(ctx, &smp, errf)
	var window []float64
	if !s.noTables {
		window = s.sampleTables(ctx, &smp, errf)
	}
	s.fresh = append(s.fresh, window...)
	slices.Sort(window)
	smp.FreshRows = len(window)
	if len(window) > 0 {
		smp.FreshP50, smp.FreshP95, smp.FreshP99 = quantile(window, 0.50), quantile(window, 0.95), quantile(window, 0.99)
	}
	if n, err := dirBytes(s.cfg.DataDir); err != nil {
		errf("data dir size: %v", err)
	} else {
		smp.DataDirBytes = n
	}
	s.samples = append(s.samples, smp)
	if s.bar != nil {
		if feeding { // the drain's bar shows the lags instead
			s.bar.SetNote(barNote(smp))
		}
	} else {
		fmt.Fprintln(s.cfg.Out, progressLine(smp))
	}
}

// sampleProc reads the child's memory, CPU and I/O from /proc; CPU % is
// over the time since the previous sample.
func (s *sampler) sampleProc(smp *SoakSample, now time.Time, errf func(string, ...any)) {
	p, err := readProc(s.c.Pid())
	if err != nil {
		errf("proc: %v", err)
		return
	}
	smp.RSSBytes, smp.AnonBytes, smp.FileBytes, smp.HWMBytes = p.RSS, p.Anon, p.File, p.HWM
	smp.CPUSeconds = float64(p.CPUTicks) / clockTicks
	if dt := now.Sub(s.prevAt).Seconds(); dt > 0 {
		smp.CPUPercent = float64(p.CPUTicks-s.prev.CPUTicks) / clockTicks / dt * 100
	}
	smp.WriteBytes, smp.CancelledWriteBytes, smp.WChar = p.WriteBytes, p.CancelledWriteBytes, p.WChar
	s.prev = p
}

// sampleStatus reads the child's /status: broker counts, Go runtime, each
// query's lag, batches and error.
func (s *sampler) sampleStatus(ctx context.Context, smp *SoakSample, errf func(string, ...any)) {
	st, err := observe.FetchStatus(ctx, s.c.Base)
	if err != nil {
		errf("status: %v", err)
		return
	}
	smp.StatusOK = true
	smp.ObjectStore = st.ObjectStore
	smp.Broker, smp.DLQ = st.Topics[ingest.DefaultTopic], st.Topics[ingest.DefaultDLQTopic]
	if st.Runtime != nil {
		smp.Runtime = *st.Runtime
	}
	smp.Lags, smp.Batches = map[string]int64{}, map[string]observe.QueryStatus{}
	for n, q := range st.Queries {
		smp.Lags[n] = q.Lag
		smp.Batches[n] = observe.QueryStatus{Batches: q.Batches, BatchSeconds: q.BatchSeconds, CommitSeconds: q.CommitSeconds}
		if q.Error != "" {
			smp.QueryErrs = append(smp.QueryErrs, n+": "+q.Error)
		}
	}
}

// sampleTables reads every table's newest metadata into smp.Tables and
// returns the freshness of the silver.edits append snapshots not seen
// before (unsorted).
func (s *sampler) sampleTables(ctx context.Context, smp *SoakSample, errf func(string, ...any)) []float64 {
	idents, err := s.obs.Tables()
	if err != nil {
		errf("tables: %v", err)
	}
	var window []float64
	for _, ident := range idents {
		v, err := s.obs.Table(ctx, ident)
		if err != nil {
			errf("%s: %v", ident, err)
			continue
		}
		tr := s.tracked[ident]
		if tr == nil {
			tr = &snapshotTracker{}
			s.tracked[ident] = tr
		}
		fresh, missed := tr.observe(v)
		smp.Tables[ident] = SoakTableSample{Snapshots: len(v.Snapshots), DataFiles: v.DataFiles, Records: v.Records,
			MetadataBytes: v.MetadataBytes, LargestMetadataBytes: v.LargestMetadataBytes, MetadataFiles: v.MetadataFiles,
			New: len(fresh), Missed: missed}
		if ident != table.SilverEdits {
			continue
		}
		for _, snap := range fresh {
			if snap.Summary["operation"] != "append" {
				continue
			}
			f, err := freshness(ctx, v, snap)
			if err != nil {
				errf("freshness of %s snapshot %d: %v", ident, snap.ID, err)
				continue
			}
			window = append(window, f...)
		}
	}
	return window
}

// freshness reads the intake_time of every row snapshot snap of silver
// added and returns snapshot timestamp minus intake time, in seconds (how
// bench defines freshness: the replay stamps meta.dt when it sends).
func freshness(ctx context.Context, v *table.TableView, snap table.Snapshot) ([]float64, error) {
	recs, err := v.ReadAppended(ctx, snap.ID, "intake_time")
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var out []float64
	for _, r := range recs {
		col, ok := r.Column(0).(*array.Timestamp)
		tt, tok := r.Schema().Field(0).Type.(*arrow.TimestampType)
		if !ok || !tok {
			return nil, fmt.Errorf("intake_time is %s, not a timestamp", r.Schema().Field(0).Type)
		}
		for i := range col.Len() {
			out = append(out, float64(snap.TimestampMs-col.Value(i).ToTime(tt.Unit).UnixMilli())/1000)
		}
	}
	return out, nil
}

// snapshotTracker follows one table's snapshots across readings: which are
// new, and which were committed and expired between two readings without
// ever being seen (their sequence numbers are in no reading).
type snapshotTracker struct {
	seen    map[int64]bool // snapshot ids in the previous reading
	through int64          // every sequence number up to this one is accounted for
	missed  int
}

// observe returns the snapshots of v not seen before, oldest first, and how
// many sequence numbers since the previous reading are missing from v.
func (t *snapshotTracker) observe(v *table.TableView) (fresh []table.Snapshot, missed int) {
	present := make(map[int64]bool, len(v.Snapshots))
	seqs := make(map[int64]bool, len(v.Snapshots))
	for _, s := range v.Snapshots {
		present[s.ID] = true
		seqs[s.Sequence] = true
		if !t.seen[s.ID] {
			fresh = append(fresh, s)
		}
	}
	for q := t.through + 1; q <= v.LastSequence; q++ {
		if !seqs[q] {
			missed++
		}
	}
	t.through = max(t.through, v.LastSequence)
	t.seen = present
	t.missed += missed
	return fresh, missed
}

// shortNames label the tables in progress lines.
var shortNames = map[string]string{
	table.Bronze: "bronze", table.SilverEdits: "silver", table.EditorSessions: "sessions",
	table.StreamProgress: "progress", "ops.runs": "runs", "ops.asset_checks": "checks",
}
