package bench

import (
	"context"
	"fmt"
	"io"
	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/ingest/replay"
	"lakehouse/internal/appliance"
	"lakehouse/internal/humanize"
	"lakehouse/internal/progress"
	"lakehouse/stream"
	"lakehouse/stream/lakeio"
	"lakehouse/table"
	"log/slog"
	"math"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Phase is one fixed-rate run of the whole appliance.
type Phase struct {
	Rate     float64       `json:"rate"`
	Trigger  time.Duration `json:"trigger_ns"`
	Duration time.Duration `json:"duration_ns"`
}

func (p Phase) name() string {
	return fmt.Sprintf("%s ev/s, trigger %s", humanize.Count(int64(p.Rate)), p.Trigger)
}

// PhaseResult is what one phase measured. Every figure comes from the
// broker, the tables on disk or the kernel (rusage, /proc), not from the
// pipeline's own counters.
type PhaseResult struct {
	Phase           Phase   `json:"phase"`
	Published       int64   `json:"published"`        // events the replay sent
	PublishSeconds  float64 `json:"publish_seconds"`  // first to last send
	AchievedRate    float64 `json:"achieved_rate"`    // published / publish seconds
	Expected        int64   `json:"expected_silver"`  // unique edit/new events published
	FoundSilver     int64   `json:"found_silver"`     // rows in silver.edits
	DistinctSilver  int64   `json:"distinct_silver"`  // distinct event ids in silver
	FreshP50        float64 `json:"fresh_p50_s"`      // publish -> silver commit, seconds
	FreshP95        float64 `json:"fresh_p95_s"`      //
	FreshP99        float64 `json:"fresh_p99_s"`      //
	FreshMax        float64 `json:"fresh_max_s"`      //
	CatchUpSeconds  float64 `json:"catch_up_seconds"` // after the last send until silver held everything
	BronzeCommits   int64   `json:"bronze_commits"`
	SilverCommits   int64   `json:"silver_commits"`
	DataFiles       int64   `json:"data_files"` // added to bronze, silver and sessions
	CPUSeconds      float64 `json:"cpu_seconds"`
	PeakRSSMiB      float64 `json:"peak_rss_mib"`      // VmHWM: includes broker.db pages mapped by bbolt
	PeakAnonMiB     float64 `json:"peak_anon_rss_mib"` // sampled RssAnon: heap, stacks, buffers
	BrokerMessages  int64   `json:"broker_messages"`
	DLQMessages     int64   `json:"dlq_messages"`
	BronzeRows      int64   `json:"bronze_rows"`
	SilverLate      int64   `json:"silver_dropped_late"`
	SilverDups      int64   `json:"silver_duplicates_dropped"`
	SilverBad       int64   `json:"silver_unparseable"`
	KeptUp          bool    `json:"kept_up"`
	Error           string  `json:"error,omitempty"`
	freshnessSample []float64

	// StageCPU is CPUSeconds split by stage (see stages) from the phase's
	// CPU profile, in CPU-µs per published event; it adds up to
	// CPUSeconds per published event. Nil when there is no split:
	// StageError says why (it never fails the phase).
	StageCPU     map[string]float64 `json:"stage_cpu_us_per_event,omitempty"`
	StageSampled float64            `json:"stage_cpu_sampled_seconds,omitempty"` // CPU the profile sampled, before scaling to CPUSeconds
	StageError   string             `json:"stage_cpu_error,omitempty"`
}

// stallTimeout: a phase fails when silver commits nothing new for this long.
const stallTimeout = time.Minute

// benchRecording is the recording every phase loops over.
var recording = func() replay.Recording { return replay.Generate(42, 2000) }

// runPhase runs the appliance on a fresh data directory while a replay
// server publishes at the phase's rate, waits until silver holds every
// event, and measures. show draws the wait (silver's rows out of the
// expected, the events sent) and receives the phase's result line.
func (o Options) runPhase(ctx context.Context, ph Phase, base string, show progress.Display) (res PhaseResult) {
	res.Phase = ph
	dir, err := os.MkdirTemp(base, "phase-")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if !o.Keep {
		defer os.RemoveAll(dir)
	}

	rec := recording()
	total := int64(ph.Rate * ph.Duration.Seconds())
	loops := int((total + int64(rec.Len()) - 1) / int64(rec.Len()))
	src := replay.New(replay.Config{Seed: 42, Rate: ph.Rate, Restamp: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	src.Loops(rec, loops)
	var url string
	withLabel("replay", func() { url, err = src.Start("127.0.0.1:0") }) // the server's goroutines keep the label
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer src.Close()
	counts := src.Counts()
	res.Published = counts.OnTime
	res.Expected = counts.OnTimeEditNew

	ResetPeakRSS()
	anonDone := make(chan float64)
	anonStop := make(chan struct{})
	withLabel("bench", func() { go SampleAnon(anonStop, anonDone) }) // the bench's own CPU, not the appliance's
	// The phase's CPU profile covers what CPUSeconds does; the split by
	// stage is computed from it once both are taken.
	prof := startCPUProfile()
	defer prof.stop()
	cpu0 := cpuTime()
	// measureTables reads every snapshot of the phase afterwards, as a
	// downstream reader would: the appliance holds their history.
	p, err := openAppliance(ctx, Settings{DataDir: dir, Source: url, Trigger: ph.Trigger, MaxOffsets: o.MaxOffsets,
		HoldHistory: []string{table.Bronze, table.SilverEdits, table.EditorSessions}})
	if err != nil {
		res.Error = err.Error()
		close(anonStop)
		<-anonDone
		return res
	}
	defer p.Close()
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- p.Run(runCtx, io.Discard) }()

	var firstSend, lastSend time.Time
	var stopped bool
	withLabel("bench", func() { firstSend, lastSend, stopped = o.waitPhase(ctx, ph, p, src, counts, errc, show, &res) })
	if stopped {
		stop()
		close(anonStop)
		res.PeakAnonMiB = <-anonDone
		return res
	}
	stop()
	<-errc
	res.CPUSeconds = cpuTime() - cpu0
	profBytes, profErr := prof.stop()
	res.setStages(profBytes, profErr)
	if err := writeProfile(o.ProfileDir, fmt.Sprintf("cpu-%d-%s.prof", int64(ph.Rate), ph.Trigger), profBytes); err != nil {
		fmt.Fprintf(show.W, "bench: %v\n", err)
	}
	res.PeakRSSMiB = procStatusMiB("VmHWM")
	close(anonStop)
	res.PeakAnonMiB = <-anonDone
	res.PublishSeconds = lastSend.Sub(firstSend).Seconds()
	if res.PublishSeconds > 0 {
		res.AchievedRate = float64(counts.Events) / res.PublishSeconds
	}
	res.countBroker(ctx, p.Broker())
	if err := res.measureTables(ctx, p.Lake()); err != nil && res.Error == "" {
		res.Error = err.Error()
	}
	res.judge(ph, show.W)
	return res
}

// waitPhase waits until the broker holds every event the replay holds and
// no query has anything left to read (res.CatchUpSeconds is the wait after
// the last send), drawing silver's rows on show; it gives up when nothing
// moves for stallTimeout or past a hard cap (res.Error says so). stopped is
// true when the appliance ended by itself (res.Error says why).
func (o Options) waitPhase(ctx context.Context, ph Phase, p *appliance.Appliance, src *replay.Server, counts replay.Counts, errc <-chan error, show progress.Display, res *PhaseResult) (firstSend, lastSend time.Time, stopped bool) {
	// A phase the appliance cannot keep up with publishes for longer than
	// its duration and then catches up; it is given up only when silver
	// makes no progress for stallTimeout (or after the hard cap).
	hardCap := time.Now().Add(10*ph.Duration + 5*time.Minute)
	lastProgress, lastMark := time.Now(), ""
	bar := show.Start(progress.Task{Label: fmt.Sprintf("bench: %s ev/s, %s:", humanize.Count(int64(ph.Rate)), ph.Trigger), Total: res.Expected, Unit: "in silver"})
	defer func() {
		if st, err := p.Lake().Stats(ctx, table.SilverEdits); err == nil {
			bar.Set(st.Records)
		}
		bar.SetNote("sent " + humanize.Count(src.Counts().Sent) + "/" + humanize.Count(counts.Events))
		bar.Finish()
	}()
	var lastShown time.Time
	for {
		time.Sleep(100 * time.Millisecond)
		now := time.Now()
		c := src.Counts()
		if now.Sub(lastShown) >= time.Second { // silver's row count from its metadata, once a second
			if st, err := p.Lake().Stats(ctx, table.SilverEdits); err == nil {
				bar.Set(st.Records)
			}
			bar.SetNote("sent " + humanize.Count(c.Sent) + "/" + humanize.Count(counts.Events))
			lastShown = now
		}
		if c.Sent > 0 && firstSend.IsZero() {
			firstSend = now
		}
		if c.Sent < counts.Events {
			lastSend = now
		}
		st := p.Status(ctx, stream.BronzeQuery, "silver")
		// Done when the broker holds every event the replay holds (not
		// merely sent: ingest may still be batching the last ones) and no
		// query has anything left to read.
		if c.Sent >= counts.Events && st.Drained(ingest.DefaultTopic, counts.OnTime) {
			res.CatchUpSeconds = now.Sub(lastSend).Seconds()
			writeHeapProfile(o.ProfileDir, fmt.Sprintf("heap-%d-%s.prof", int64(ph.Rate), ph.Trigger))
			return firstSend, lastSend, false
		}
		// Progress: the broker or any query moved.
		if mark := fmt.Sprint(c.Sent, st.Topics[ingest.DefaultTopic], st.Lags()); mark != lastMark {
			lastProgress, lastMark = now, mark
		}
		if now.Sub(lastProgress) > stallTimeout || now.After(hardCap) {
			res.Error = fmt.Sprintf("the pipeline stopped catching up (no progress for %s, or over %s in all): %s", stallTimeout, 10*ph.Duration+5*time.Minute, st.Lags())
			return firstSend, lastSend, false
		}
		select {
		case err := <-errc:
			res.Error = fmt.Sprintf("pipeline stopped: %v", err)
			return firstSend, lastSend, true
		default:
		}
	}
}

// measureTables reads silver's snapshots: freshness is each row's commit
// time (its snapshot's timestamp) minus its intake time (stamped by the
// replay server when it sent the event).
func (r *PhaseResult) measureTables(ctx context.Context, lake *table.Lake) error {
	snaps, err := lake.AppendsAfter(ctx, table.SilverEdits, 0)
	if err != nil {
		return err
	}
	ids := map[string]struct{}{}
	var fresh []float64
	for _, s := range snaps {
		r.SilverCommits++
		r.DataFiles += summaryInt(s.Summary, "added-data-files")
		if st, _, ok := lakeio.StatsFromSummary(s.Summary); ok {
			r.SilverLate += st.DroppedByWatermark
			r.SilverDups += st.Duplicates
			r.SilverBad += st.Unparseable
		}
		recs, err := lake.ReadAppended(ctx, table.SilverEdits, s.ID)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			idc := colByName(rec, "event_id").(*array.String)
			inc := colByName(rec, "intake_time").(*array.Timestamp)
			unit := rec.Schema().Field(rec.Schema().FieldIndices("intake_time")[0]).Type.(*arrow.TimestampType).Unit
			for i := 0; i < int(rec.NumRows()); i++ {
				r.FoundSilver++
				ids[idc.Value(i)] = struct{}{}
				intake := inc.Value(i).ToTime(unit)
				fresh = append(fresh, float64(s.TimestampMs-intake.UnixMilli())/1000)
			}
			rec.Release()
		}
	}
	r.DistinctSilver = int64(len(ids))
	for _, ident := range []string{table.Bronze, table.EditorSessions} {
		snaps, err := lake.AppendsAfter(ctx, ident, 0)
		if err != nil {
			return err
		}
		for _, s := range snaps {
			if ident == table.Bronze {
				r.BronzeCommits++
				r.BronzeRows += summaryInt(s.Summary, "added-records")
			}
			r.DataFiles += summaryInt(s.Summary, "added-data-files")
		}
	}
	sort.Float64s(fresh)
	r.freshnessSample = fresh
	r.FreshP50, r.FreshP95, r.FreshP99 = quantile(fresh, 0.50), quantile(fresh, 0.95), quantile(fresh, 0.99)
	if len(fresh) > 0 {
		r.FreshMax = fresh[len(fresh)-1]
	}
	return nil
}

func colByName(rec arrow.RecordBatch, name string) arrow.Array {
	return rec.Column(rec.Schema().FieldIndices(name)[0])
}

func summaryInt(m map[string]string, key string) int64 {
	n, _ := strconv.ParseInt(m[key], 10, 64)
	return n
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// countBroker adds up what the broker holds of the stream and the DLQ.
func (res *PhaseResult) countBroker(ctx context.Context, b broker.Log) {
	for _, t := range []struct {
		name string
		n    *int64
	}{{ingest.DefaultTopic, &res.BrokerMessages}, {ingest.DefaultDLQTopic, &res.DLQMessages}} {
		if offs, err := b.Offsets(ctx, t.name); err == nil {
			for _, o := range offs {
				*t.n += o.End - o.Start
			}
		}
	}
}

// judge decides whether the appliance kept up with the phase and prints its
// line.
func (res *PhaseResult) judge(ph Phase, w io.Writer) {
	// Kept up: everything in silver, the replay published at the asked rate
	// (it shares the CPU, so an overloaded appliance slows it down), and
	// freshness stayed bounded: p99 and the catch-up after the last send
	// within 3 triggers + 5 s.
	bound := 3*ph.Trigger.Seconds() + 5
	res.KeptUp = res.Error == "" && res.FoundSilver == res.Expected && res.DistinctSilver == res.Expected &&
		res.AchievedRate >= 0.95*ph.Rate && res.FreshP99 < bound && res.CatchUpSeconds < bound
	fmt.Fprintf(w, "bench: %-28s sent %s at %s ev/s, silver %s/%s, freshness p50 %.2fs p95 %.2fs p99 %.2fs, cpu %.1fs, peak RSS %.0f MiB (anon %.0f MiB); %s\n",
		ph.name(), humanize.Count(res.Published), humanize.Count(int64(res.AchievedRate)), humanize.Count(res.FoundSilver), humanize.Count(res.Expected),
		res.FreshP50, res.FreshP95, res.FreshP99, res.CPUSeconds, res.PeakRSSMiB, res.PeakAnonMiB, res.stageLine())
}
