package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"lakehouse/ingest/replay"
	"lakehouse/internal/humanize"
	"lakehouse/internal/launch"
	"lakehouse/internal/observe"
	"lakehouse/internal/progress"
	"lakehouse/table"
	"lakehouse/verify"
)

// Defaults of the soak: the real stream's rate with its peaks, sampled
// every 10 s.
const (
	DefaultSoakRate        = 35.0
	DefaultSoakBurst       = 100.0
	DefaultSoakBurstEvery  = 5 * time.Minute
	DefaultSoakBurstLength = 10 * time.Second
	DefaultSoakSample      = 10 * time.Second
	DefaultSoakMarkEvery   = time.Minute // a canary, and a violation, this often
	DefaultSoakRecording   = 100_000     // events in the looped recording, at most
	DefaultSoakWarmup      = 5 * time.Minute
	DefaultSoakDrain       = 5 * time.Minute
	// DefaultSoakLargeRecording bounds the recording of padded events
	// (EventBytes): 500 of 200 KB are 100 MB in the parent.
	DefaultSoakLargeRecording = 500
)

// feedStep is how often the soak enqueues what its rate schedule has due;
// the replay sends it flat out.
const feedStep = 100 * time.Millisecond

// SoakConfig configures Soak. Zero fields take the Default* values.
type SoakConfig struct {
	Duration time.Duration `json:"duration_ns"` // how long events are fed (required)
	// Rate is the base rate (events/s); Burst the rate during the
	// BurstLength at the end of every BurstEvery.
	Rate        float64       `json:"rate"`
	Burst       float64       `json:"burst_rate"`
	BurstEvery  time.Duration `json:"burst_every_ns"`
	BurstLength time.Duration `json:"burst_length_ns"`
	// Sample is the interval of the samples.
	Sample time.Duration `json:"sample_ns"`
	// CanaryEvery and ViolationEvery space the canaries (skipped by ingest)
	// and contract violations (to the DLQ) mixed into the stream.
	CanaryEvery    time.Duration `json:"canary_every_ns"`
	ViolationEvery time.Duration `json:"violation_every_ns"`
	// Warmup is left out of the peak RSS (default the shorter of
	// DefaultSoakWarmup and a tenth of Duration).
	Warmup time.Duration `json:"warmup_ns"`
	Seed   int64         `json:"seed"`
	// Recording is the number of generated events looped over (default
	// the events expected, at most DefaultSoakRecording).
	Recording int `json:"recording_events"`
	// EventBytes, when positive, pads every event of the recording (in its
	// comment) to at least this many bytes: large events, still valid. The
	// recording then defaults to at most DefaultSoakLargeRecording events.
	EventBytes int `json:"event_bytes,omitempty"`
	// S3 puts the appliance's warehouse on S3: an S3 endpoint this process
	// serves on loopback (gofakes3, in memory), as `prove --warehouse s3`
	// does. The soak then reports the appliance's object-store requests;
	// the tables are not sampled (their metadata files are not on local
	// disk), and silver's freshness is read from its rows after the soak
	// (silverDelays).
	S3 bool `json:"s3,omitempty"`
	// ExtraArgs are appended to the appliance's `run` arguments.
	ExtraArgs []string `json:"extra_args,omitempty"`
	// DrainTimeout bounds the wait, after the last event is fed, for the
	// pipeline to hold everything (DefaultSoakDrain).
	DrainTimeout time.Duration `json:"drain_timeout_ns"`

	// DataDir is the fresh data directory the appliance runs on; LogPath
	// receives its output (default DataDir + ".log").
	DataDir string `json:"data_dir"`
	LogPath string `json:"log"`
	// Launch returns the command that runs the appliance (`lakehouse run`)
	// with args; Soak sets its output and starts it.
	Launch func(args []string) *exec.Cmd `json:"-"`
	// Out receives one progress line per sample (nil: discarded).
	Out io.Writer `json:"-"`
	// Progress, when it is a terminal, shows the soak as a bar (time out
	// of Duration with the last sample beside it, then the drain with the
	// lags) instead of the lines per sample on Out; it also shows the
	// verifier's reading.
	// The zero Display is plain lines on Out.
	Progress progress.Display `json:"-"`
}

func (c *SoakConfig) fill() {
	defF := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defF(&c.Rate, DefaultSoakRate)
	defF(&c.Burst, DefaultSoakBurst)
	defD(&c.BurstEvery, DefaultSoakBurstEvery)
	defD(&c.BurstLength, DefaultSoakBurstLength)
	c.BurstLength = min(c.BurstLength, c.BurstEvery)
	defD(&c.Sample, DefaultSoakSample)
	defD(&c.CanaryEvery, DefaultSoakMarkEvery)
	defD(&c.ViolationEvery, DefaultSoakMarkEvery)
	defD(&c.Warmup, min(DefaultSoakWarmup, c.Duration/10))
	defD(&c.DrainTimeout, DefaultSoakDrain)
	if c.Recording <= 0 {
		most := DefaultSoakRecording
		if c.EventBytes > 0 {
			most = DefaultSoakLargeRecording
		}
		c.Recording = int(min(math.Ceil(c.Due(c.Duration)), float64(most)))
		c.Recording = max(c.Recording, 1)
	}
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	if c.LogPath == "" && c.DataDir != "" {
		c.LogPath = filepath.Clean(c.DataDir) + ".log"
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Progress.W == nil {
		c.Progress = progress.Display{W: c.Out}
	}
}

// burstTime is how much of [0, t) lies in bursts: the last BurstLength of
// every BurstEvery.
func (c SoakConfig) burstTime(t time.Duration) time.Duration {
	if c.BurstEvery <= 0 || c.BurstLength <= 0 {
		return 0
	}
	n, rem := t/c.BurstEvery, t%c.BurstEvery
	return n*c.BurstLength + max(0, rem-(c.BurstEvery-c.BurstLength))
}

// Due returns the number of stream events the schedule has fed by elapsed
// time t: Rate events/s, Burst during bursts.
func (c SoakConfig) Due(t time.Duration) float64 {
	b := c.burstTime(t).Seconds()
	return c.Rate*(t.Seconds()-b) + c.Burst*b
}

// marks returns how many marks spaced every apart, the first at first,
// fall in [0, t].
func marks(t, every, first time.Duration) int {
	if every <= 0 || t < first {
		return 0
	}
	return int((t-first)/every) + 1
}

// SoakSample is one sample: the kernel's view of the appliance process, its
// Go runtime and broker counts from /status, and the tables as their
// metadata files on disk show them.
type SoakSample struct {
	At      time.Time `json:"at"`
	Elapsed float64   `json:"elapsed_s"`
	Feeding bool      `json:"feeding"` // false once the last event was fed (draining)

	Sent int64 `json:"sent"` // events the replay wrote to the wire (all kinds)
	// Rate is the events sent per second since the previous sample.
	Rate float64 `json:"rate"`

	// From /proc/<pid>.
	RSSBytes            int64   `json:"rss_bytes"`
	HWMBytes            int64   `json:"hwm_bytes"` // VmHWM: the peak RSS so far, between samples too
	AnonBytes           int64   `json:"anon_rss_bytes"`
	FileBytes           int64   `json:"file_rss_bytes"`
	CPUSeconds          float64 `json:"cpu_seconds"` // since the appliance started
	CPUPercent          float64 `json:"cpu_percent"` // of one core, since the previous sample
	WriteBytes          int64   `json:"write_bytes"`
	CancelledWriteBytes int64   `json:"cancelled_write_bytes"`
	WChar               int64   `json:"wchar"`

	// From GET /status (StatusOK false: it did not answer).
	StatusOK  bool             `json:"status_ok"`
	Broker    int64            `json:"broker_messages"`
	DLQ       int64            `json:"dlq_messages"`
	Runtime   observe.Runtime  `json:"runtime"`
	Lags      map[string]int64 `json:"lags,omitempty"`
	QueryErrs []string         `json:"query_errors,omitempty"`
	// Queries' batch counts and duration sums since the appliance started.
	Batches map[string]observe.QueryStatus `json:"batches,omitempty"`
	// ObjectStore is the requests the appliance sent to its S3 warehouse
	// since it started (nil on local disk).
	ObjectStore *table.ObjectStoreRequests `json:"object_store_requests,omitempty"`

	// From the warehouse's metadata files.
	Tables map[string]SoakTableSample `json:"tables"`
	// Freshness of the silver rows first seen in this sample: snapshot
	// timestamp minus intake_time, seconds (zero when FreshRows is 0).
	FreshRows int     `json:"fresh_rows"`
	FreshP50  float64 `json:"fresh_p50_s,omitempty"`
	FreshP95  float64 `json:"fresh_p95_s,omitempty"`
	FreshP99  float64 `json:"fresh_p99_s,omitempty"`

	DataDirBytes int64    `json:"data_dir_bytes"`
	Errors       []string `json:"errors,omitempty"`
}

// SoakTableSample is one table in a sample.
type SoakTableSample struct {
	Snapshots            int   `json:"snapshots"`  // in the current metadata
	DataFiles            int64 `json:"data_files"` // live: total-data-files of the current snapshot
	Records              int64 `json:"records"`
	MetadataBytes        int64 `json:"metadata_bytes"`         // the current metadata.json
	LargestMetadataBytes int64 `json:"largest_metadata_bytes"` // the largest metadata.json present
	MetadataFiles        int   `json:"metadata_files"`
	New                  int   `json:"new_snapshots"`    // snapshots not in any earlier sample
	Missed               int   `json:"missed_snapshots"` // committed and expired since the previous sample, never seen
}

// SoakResult is what a soak observed.
type SoakResult struct {
	Config  SoakConfig    `json:"config"`
	Started time.Time     `json:"started"`
	Replay  replay.Counts `json:"replay"`
	// PeakRate is the most events sent in one second; FeedSeconds how long
	// events were fed, DrainSeconds the wait after that until the broker
	// and every query held everything.
	PeakRate     float64 `json:"peak_rate"`
	FeedSeconds  float64 `json:"feed_seconds"`
	DrainSeconds float64 `json:"drain_seconds"`
	HarnessCPU   float64 `json:"harness_cpu_seconds"` // this process: replay server and observer
	// Baseline is the appliance's CPU time and net bytes written when the
	// soak's clock started (it had just announced its HTTP surface).
	BaselineCPUSeconds float64       `json:"baseline_cpu_seconds"`
	BaselineWriteBytes int64         `json:"baseline_write_bytes"`
	Samples            []SoakSample  `json:"samples,omitempty"` // not in WriteSoakReport's JSON
	Summary            SoakSummary   `json:"summary"`
	Expect             verify.Expect `json:"expect"`
	Verified           bool          `json:"verified"` // the verifier ran (false: the soak stopped early)
	Report             verify.Report `json:"verify"`
	Err                string        `json:"error,omitempty"`

	fresh []float64 // every observed silver row's freshness, seconds
}

// Soak runs the appliance as a child process for cfg.Duration while a
// replay server in this process feeds it a live-like stream at a varying
// rate, and samples its footprint from outside: the kernel's /proc of the
// child, its /status, and the warehouse's metadata files (the catalog and
// broker files stay closed: the child holds their locks). Then it waits for
// the pipeline to drain, stops the child with SIGTERM and runs the verifier
// against expectations computed from the replay's counts. It returns an
// error wrapping verify.ErrFailed when a check fails; the result holds whatever was
// sampled even then, and when ctx ends early.
func Soak(ctx context.Context, cfg SoakConfig) (SoakResult, error) {
	cfg.fill()
	res := SoakResult{Config: cfg, Started: time.Now().UTC()}
	fail := func(err error) (SoakResult, error) {
		res.Err = err.Error()
		res.Summary = summarize(&res)
		return res, err
	}
	if cfg.Launch == nil {
		return fail(errors.New("soak: no Launch function"))
	}
	if cfg.Duration <= 0 {
		return fail(errors.New("soak: no duration"))
	}
	if err := launch.FreshDir(cfg.DataDir); err != nil {
		return fail(err)
	}
	out := cfg.Out
	src, url, feed, err := soakSource(cfg)
	if err != nil {
		return fail(err)
	}
	defer src.Close()
	args := []string{"--data", cfg.DataDir, "--source", url, "--http", "127.0.0.1:0"}
	lakeCfg := table.Config{Dir: cfg.DataDir}
	var env []string
	if cfg.S3 {
		endpoint, stop, err := launch.StartS3()
		if err != nil {
			return fail(err)
		}
		defer stop() // after the verifier, which reads the warehouse
		lakeCfg.Warehouse, lakeCfg.S3 = soakWarehouse, launch.S3Config(endpoint)
		args = append(args, "--warehouse", soakWarehouse)
		env = launch.S3Env(endpoint)
	}
	cmd := cfg.Launch(append(args, cfg.ExtraArgs...))
	if env != nil {
		cmd.Env = append(append(os.Environ(), cmd.Env...), env...)
	}
	c, err := launch.Start(ctx, cmd, cfg.LogPath, 2*time.Minute)
	if err != nil {
		return fail(err)
	}
	s := &sampler{cfg: cfg, c: c, src: src, obs: table.Observer{Dir: filepath.Join(cfg.DataDir, "warehouse")}, noTables: cfg.S3,
		tracked: map[string]*snapshotTracker{}, start: time.Now(), selfCPU0: cpuTime()}
	if s.prev, err = readProc(c.Pid()); err != nil {
		c.Kill()
		return fail(fmt.Errorf("soak: read the appliance's /proc: %w", err))
	}
	s.prevAt = s.start
	res.BaselineCPUSeconds = float64(s.prev.CPUTicks) / clockTicks
	res.BaselineWriteBytes = s.prev.WriteBytes - s.prev.CancelledWriteBytes

	feedCtx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	fed := make(chan float64, 1)
	go func() { fed <- s.feed(feedCtx, feed) }()

	runErr := s.loop(ctx, fed, &res)
	stopFeed()
	res.Replay = src.Counts()
	res.HarnessCPU = cpuTime() - s.selfCPU0
	res.Samples, res.fresh = s.samples, s.fresh
	if runErr != nil {
		if done, _ := c.Exited(); !done {
			_ = c.Stop(2 * time.Minute)
		}
		return fail(runErr)
	}
	fmt.Fprintf(out, "soak: drained %.1f s after the last event; stopping the appliance (SIGTERM)\n", res.DrainSeconds)
	if err := c.Stop(2 * time.Minute); err != nil {
		return fail(err)
	}
	return soakVerify(ctx, cfg, lakeCfg, res)
}

// soakWarehouse is an S3 soak's warehouse, in the bucket startS3 serves.
const soakWarehouse = "s3://" + launch.Bucket + "/soak"

// soakSource starts the replay server the soak feeds from and says what it
// plays: the generated recording (padded to cfg.EventBytes), looped with
// fresh ids as the feed asks.
func soakSource(cfg SoakConfig) (*replay.Server, string, *replay.Feed, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	src := replay.New(replay.Config{Seed: cfg.Seed, Restamp: true, ResumeAfter: true, Logger: quiet})
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		return nil, "", nil, fmt.Errorf("start replay server: %w", err)
	}
	rec := replay.Generate(cfg.Seed, cfg.Recording)
	size := ""
	if cfg.EventBytes > 0 {
		rec = rec.Padded(cfg.EventBytes)
		size = fmt.Sprintf(" of %s bytes", humanize.Count(int64(cfg.EventBytes)))
	}
	fmt.Fprintf(cfg.Out, "soak: %s at %g ev/s, bursts to %g ev/s for %s every %s; sample every %s; seed %d; recording %s events%s; data %s\n",
		cfg.Duration, cfg.Rate, cfg.Burst, cfg.BurstLength, cfg.BurstEvery, cfg.Sample, cfg.Seed, humanize.Count(int64(cfg.Recording)), size, cfg.DataDir)
	return src, url, src.Feed(rec), nil
}

// soakVerify runs the verifier on the stopped appliance's data directory
// against what the replay sent, and completes res's summary.
func soakVerify(ctx context.Context, cfg SoakConfig, lakeCfg table.Config, res SoakResult) (SoakResult, error) {
	res.Expect = verify.Expect{Messages: res.Replay.OnTime, Silver: res.Replay.OnTimeEditNew, DLQ: res.Replay.Violations}
	var err error
	res.Report, err = verify.RunDir(ctx, lakeCfg, argValue(cfg.ExtraArgs, "broker"), res.Expect, cfg.Progress)
	res.Verified = err == nil || errors.Is(err, verify.ErrFailed)
	if err != nil && !res.Verified {
		err = fmt.Errorf("verify: %w", err)
		res.Err = err.Error()
		res.Summary = summarize(&res)
		return res, err
	}
	if cfg.S3 && len(res.fresh) == 0 {
		if res.fresh, err = silverDelays(ctx, lakeCfg); err != nil {
			fmt.Fprintf(cfg.Out, "soak: freshness from silver: %v\n", err)
		}
	}
	res.Summary = summarize(&res)
	if end, derr := dirBytes(cfg.DataDir); derr == nil {
		res.Summary.DataDirBytes = end // after the last flush and the verifier
	}
	if err != nil {
		res.Err = err.Error()
	}
	fmt.Fprintln(cfg.Out, "soak: "+res.Summary.Line())
	return res, err
}

// silverDelays reads, for an S3 soak whose snapshots were not sampled,
// every silver.edits row's processed_time minus its intake_time, seconds:
// the delay to silver's batch, which its commit ends.
func silverDelays(ctx context.Context, cfg table.Config) ([]float64, error) {
	cfg.ReadOnly = true
	lake, err := table.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer lake.Close()
	var out []float64
	err = lake.ScanColumns(ctx, table.SilverEdits, []string{"intake_time", "processed_time"}, func(rec arrow.RecordBatch) error {
		inCol, prCol := colByName(rec, "intake_time"), colByName(rec, "processed_time")
		in, err := microsOf(inCol)
		if err != nil {
			return fmt.Errorf("intake_time: %w", err)
		}
		pr, err := microsOf(prCol)
		if err != nil {
			return fmt.Errorf("processed_time: %w", err)
		}
		for i := range int(rec.NumRows()) {
			if !inCol.IsNull(i) && !prCol.IsNull(i) {
				out = append(out, float64(pr(i)-in(i))/1e6)
			}
		}
		return nil
	})
	return out, err
}

// progressLine is one plain line per sample: elapsed, sent, memory, CPU,
// snapshots per table (gold: the most of any gold table), freshness p95.
func progressLine(s SoakSample) string {
	bytesPerMiB := func(b int64) string { return fmt.Sprintf("%.0f", float64(b)/(1<<20)) }
	el := time.Duration(s.Elapsed * float64(time.Second)).Round(time.Second)
	var b strings.Builder
	fmt.Fprintf(&b, "soak %s sent %s (%.0f/s) RSS %s MiB anon %s heap %s live %s MiB CPU %.0f%% snapshots",
		el, humanize.Count(s.Sent), s.Rate, bytesPerMiB(s.RSSBytes), bytesPerMiB(s.AnonBytes), bytesPerMiB(int64(s.Runtime.HeapInUseBytes)), bytesPerMiB(int64(s.Runtime.LiveHeapBytes)), s.CPUPercent)
	names := make([]string, 0, len(s.Tables))
	for n := range s.Tables {
		names = append(names, n)
	}
	slices.SortFunc(names, compareTables)
	gold := -1
	for _, n := range names {
		if strings.HasPrefix(n, "gold.") {
			gold = max(gold, s.Tables[n].Snapshots)
			continue
		}
		label := shortNames[n]
		if label == "" {
			label = n
		}
		fmt.Fprintf(&b, " %s %d", label, s.Tables[n].Snapshots)
	}
	if gold >= 0 {
		fmt.Fprintf(&b, " gold %d", gold)
	}
	if s.FreshRows > 0 {
		fmt.Fprintf(&b, " fresh p95 %.2f s", s.FreshP95)
	} else {
		b.WriteString(" fresh p95 -")
	}
	if !s.Feeding {
		b.WriteString(" (draining)")
	}
	if len(s.Errors) > 0 {
		fmt.Fprintf(&b, " [%d read errors: %s]", len(s.Errors), s.Errors[0])
	}
	return b.String()
}

// barNote is the last sample beside the bar, shorter than its line: the
// terminal's width cuts it from the end.
func barNote(s SoakSample) string {
	bytesPerMiB := func(b int64) string { return fmt.Sprintf("%.0f", float64(b)/(1<<20)) }
	var b strings.Builder
	fmt.Fprintf(&b, "sent %s (%.0f/s) RSS %s MiB heap %s MiB CPU %.0f%%", humanize.Count(s.Sent), s.Rate, bytesPerMiB(s.RSSBytes), bytesPerMiB(int64(s.Runtime.HeapInUseBytes)), s.CPUPercent)
	if s.FreshRows > 0 {
		fmt.Fprintf(&b, " fresh p95 %.2f s", s.FreshP95)
	}
	if len(s.Errors) > 0 {
		fmt.Fprintf(&b, " [%d read errors]", len(s.Errors))
	}
	return b.String()
}

// tableOrder is the order tables are listed in: the pipeline's, then the
// rest by name.
var tableOrder = []string{table.Bronze, table.SilverEdits, table.EditorSessions, table.StreamProgress, "ops.runs", "ops.asset_checks"}

func compareTables(a, b string) int {
	ia, ib := slices.Index(tableOrder, a), slices.Index(tableOrder, b)
	switch {
	case ia >= 0 && ib >= 0:
		return ia - ib
	case ia >= 0:
		return -1
	case ib >= 0:
		return 1
	}
	return strings.Compare(a, b)
}

// argValue is the value of --name (or -name) in args, as `--name v` or
// `--name=v`, or "" (the appliance's broker when ExtraArgs name one).
func argValue(args []string, name string) string {
	for i, a := range args {
		for _, p := range []string{"--" + name, "-" + name} {
			if a == p && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v
			}
		}
	}
	return ""
}
