package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"lakehouse/ingest/replay"
	"lakehouse/internal/humanize"
	"lakehouse/internal/launch"
	"lakehouse/internal/progress"
	"lakehouse/table"
)

// Defaults of the prove scenario (issue: "Prove it").
const (
	DefaultKills          = 3
	DefaultLoops          = 50
	DefaultSample         = 400
	DefaultViolations     = 25
	DefaultLate           = 100
	DefaultLateAge        = 30 * time.Minute
	DefaultProveTrigger   = 2 * time.Second
	DefaultProveMaxOffset = 500
	DefaultDrainTimeout   = 5 * time.Minute
)

// KillAtBronzeEnv is the environment variable by which prove tells its
// child to SIGKILL itself once bronze has committed that many offsets;
// the child prints "FAULT " + KillAtBronzeHook on stderr as it dies.
const (
	KillAtBronzeEnv  = "LAKEHOUSE_KILL_AT_BRONZE"
	KillAtBronzeHook = "kill-at-bronze"
)

// ErrInconclusive means a kill landed where it proves nothing (before any
// bronze commit, or after the whole backlog was committed), or a fault hook
// did not fire: the run is neither a pass nor a fail of the claim.
var ErrInconclusive = errors.New("inconclusive")

// ProveConfig configures Prove. Zero fields take the Default* values.
type ProveConfig struct {
	Kills      int
	Seed       int64
	Loops      int // loops of the recording, each with fresh meta.ids
	Sample     int // events in the recording
	Violations int
	Late       int
	LateAge    time.Duration
	// CrashAt names a fault hook: the first kill is made by the hook (in
	// the child, at a random hit) instead of a SIGKILL from outside.
	CrashAt string
	// CrashSkip is how many hits of CrashAt pass before it fires (0: a
	// random 1 to 3). Hooks on the ingest path fire from the first batch, so
	// they need a pace (Rate) and a larger skip to land mid-backlog.
	CrashSkip int
	// Rate paces the replay server (events/s; 0: flat out).
	Rate float64
	// KillFractions, when set, fixes the kill points (fraction of the
	// backlog committed to bronze; 0 kills as soon as the appliance answers)
	// instead of random ones. Tests use it to force inconclusive runs.
	KillFractions []float64
	// CheckpointLoss deletes the bronze checkpoint before the last restart;
	// with the appliance's default policy nothing may be duplicated.
	CheckpointLoss bool
	// RESTCatalog puts the appliance's tables in an Iceberg REST catalog
	// that Prove serves from this process on 127.0.0.1 (table/restcatalog
	// over an embedded catalog in DataDir/rest-catalog, the tables under
	// DataDir/warehouse); the appliance connects with --catalog, and the
	// verifier reads through it too. The catalog outlives every kill.
	RESTCatalog bool
	// Kafka runs the appliance on a Kafka cluster Prove starts in this
	// process (kfake, on 127.0.0.1) instead of broker.db; the cluster
	// outlives every kill, and the verifier reads it with read-committed
	// isolation, counting the records it holds (its offsets skip).
	Kafka bool
	// IngestKills, with Kafka, first runs the ingest role alone (`run
	// --role ingest`: nothing reads the topic meanwhile) that many times,
	// each killed by the fault hook kafka.after-produce inside an open
	// transaction after zero or one committed batch, then once more until
	// Kafka holds the whole backlog; the runs that follow read it from
	// offset 0. Its aborted transactions then lie more than a fetch
	// (kafka.FetchBytes) before a partition's end, where a reader that
	// trusted kfake's lists of aborted transactions returned them as
	// committed; the run is inconclusive otherwise.
	IngestKills int
	// S3 puts the warehouse in an S3 bucket Prove serves from this
	// process (gofakes3, on 127.0.0.1); the appliance gets its endpoint
	// and keys in the AWS_* variables.
	S3 bool

	Partitions int
	Trigger    time.Duration
	// MaxOffsetsPerTrigger caps bronze's batches; 0 sizes them to the
	// backlog and the kills (sizeBatches), at most DefaultProveMaxOffset.
	MaxOffsetsPerTrigger int
	DrainTimeout         time.Duration

	// DataDir is the fresh data directory the appliance runs on. It must
	// not exist or be empty.
	DataDir string
	// Launch returns the command that runs the appliance (`lakehouse run`)
	// with args; Prove sets its output and starts it.
	Launch func(args []string) *exec.Cmd
	// Out receives a line per phase of the run and the summary (nil:
	// discarded).
	Out io.Writer
	// Progress shows the waiting: the backlog landing in bronze before each
	// kill, the final drain, the verifier's reading. The zero Display shows
	// plain lines on Out.
	Progress progress.Display

	lake      table.Config // how Prove opens the lake (set by Prove)
	brokerURL string       // the Kafka cluster's URL, when Kafka
	env       []string     // the appliance's extra environment (S3)
}

func (c *ProveConfig) fill() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Kills, DefaultKills)
	def(&c.Loops, DefaultLoops)
	def(&c.Sample, DefaultSample)
	def(&c.Partitions, 4)
	if c.Violations < 0 {
		c.Violations = 0
	} else if c.Violations == 0 {
		c.Violations = DefaultViolations
	}
	if c.Late < 0 {
		c.Late = 0
	} else if c.Late == 0 {
		c.Late = DefaultLate
	}
	if c.LateAge <= 0 {
		c.LateAge = DefaultLateAge
	}
	if c.Trigger <= 0 {
		c.Trigger = DefaultProveTrigger
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Progress.W == nil {
		c.Progress = progress.Display{W: c.Out}
	}
}

// ProveResult is what a prove run observed.
type ProveResult struct {
	Seed     int64
	Backlog  int64   // events in the topic before the late events
	KilledAt []int64 // bronze rows committed at each kill (read from the table)
	Hook     string  // the fault hook that made the first kill, if any
	// Aborted is the records of the topic's aborted transactions after
	// the IngestKills runs, and AbortedBeyond the most bytes of record
	// batches on the broker (compressed, as a fetch counts them) from a
	// partition's first aborted record to its end.
	Aborted       int64
	AbortedBeyond int64
	Expect        Expect
	Report        Report

	committed map[int32][]int64 // the topic's committed offsets after the IngestKills runs
}

// offsetsAt is the sum of bronze's end offsets over the partitions once
// it holds about n events of the backlog: n, unless the IngestKills runs
// left aborted transactions, whose offsets bronze passes without a row;
// then each partition's offset past its share of n committed records.
func (r *ProveResult) offsetsAt(n int64) int64 {
	var total int64
	for _, offs := range r.committed {
		total += int64(len(offs))
	}
	if total == 0 {
		return n
	}
	var sum int64
	for _, offs := range r.committed {
		if k := min(n*int64(len(offs))/total, int64(len(offs))); k > 0 {
			sum += offs[k-1] + 1
		}
	}
	return max(sum, 1)
}

// Summary is the one-paragraph report.
func (r ProveResult) Summary() string {
	kills := make([]string, len(r.KilledAt))
	for i, k := range r.KilledAt {
		kills[i] = humanize.Count(k)
	}
	c := r.Report.Counts
	verdict := "PASS"
	if !r.Report.OK() {
		verdict = "FAIL (" + strings.Join(r.Report.FailedNames(), ", ") + ")"
	}
	hook := ""
	if r.Hook != "" {
		hook = " (first kill at fault hook " + r.Hook + ")"
	}
	if r.Aborted > 0 {
		hook += fmt.Sprintf(" after ingest runs killed inside transactions (%s aborted records, up to %s of batches from them to the end)",
			humanize.Count(r.Aborted), humanize.Bytes(r.AbortedBeyond))
	}
	return fmt.Sprintf("killed %d times%s with %s of %s events committed to bronze; after restart: broker %s, bronze %s (%s distinct offsets), silver %s (%s distinct ids), late in silver %d, DLQ %s, bronze commits %s: %s",
		len(r.KilledAt), hook, strings.Join(kills, " / "), humanize.Count(r.Backlog),
		humanize.Count(c.Broker), humanize.Count(c.Bronze), humanize.Count(c.BronzeDistinct),
		humanize.Count(c.Silver), humanize.Count(c.SilverDistinct), c.LateInSilver, humanize.Count(c.DLQ),
		humanize.Count(c.BronzeCommits), verdict)
}

// Prove runs the kill test: it drives the appliance as a child process over
// real SSE from a replay server in this process, kills it mid-backlog
// cfg.Kills times, publishes late events, waits for the pipeline to drain
// and verifies every layer against the broker. It returns an error wrapping
// ErrInconclusive or ErrFailed when the run does not pass.
func Prove(ctx context.Context, cfg ProveConfig) (ProveResult, error) {
	cfg.fill()
	res := ProveResult{Seed: cfg.Seed}
	if cfg.Launch == nil {
		return res, errors.New("no Launch function")
	}
	if cfg.IngestKills > 0 && !cfg.Kafka {
		return res, errors.New("ingest kills need Kafka (the ingest role runs on a shared broker)")
	}
	if err := launch.FreshDir(cfg.DataDir); err != nil {
		return res, err
	}
	rng := rand.New(rand.NewSource(cfg.Seed))
	src, url, err := proveSource(cfg, &res)
	if err != nil {
		return res, err
	}
	defer src.Close()
	if err := sizeBatches(&cfg, res.Backlog); err != nil {
		return res, err
	}
	lakeCfg := table.Config{Dir: cfg.DataDir}
	if cfg.RESTCatalog {
		uri, stop, err := serveRESTCatalog(cfg.DataDir)
		if err != nil {
			return res, err
		}
		defer stop()
		lakeCfg.Catalog = "rest+" + uri
		fmt.Fprintf(cfg.Out, "prove: tables in the Iceberg REST catalog at %s\n", uri)
	}
	if cfg.Kafka {
		uri, stop, err := launch.StartKafka()
		if err != nil {
			return res, err
		}
		defer stop()
		cfg.brokerURL = uri
		fmt.Fprintf(cfg.Out, "prove: broker: Kafka (kfake) at %s\n", uri)
	}
	if cfg.S3 {
		endpoint, stop, err := launch.StartS3()
		if err != nil {
			return res, err
		}
		defer stop()
		lakeCfg.Warehouse = "s3://" + launch.Bucket + "/warehouse"
		lakeCfg.S3 = launch.S3Config(endpoint)
		cfg.env = launch.S3Env(endpoint)
		fmt.Fprintf(cfg.Out, "prove: warehouse %s on S3 (gofakes3) at %s\n", lakeCfg.Warehouse, endpoint)
	}
	cfg.lake = lakeCfg
	args := []string{"--data", cfg.DataDir, "--source", url, "--http", "127.0.0.1:0",
		"--partitions", strconv.Itoa(cfg.Partitions),
		"--trigger", cfg.Trigger.String(), "--sessions-trigger", cfg.Trigger.String(),
		"--max-offsets-per-trigger", strconv.Itoa(cfg.MaxOffsetsPerTrigger),
		"--refresh", "0"}
	if lakeCfg.Catalog != "" {
		args = append(args, "--catalog", lakeCfg.Catalog)
	}
	if cfg.brokerURL != "" {
		args = append(args, "--broker", cfg.brokerURL)
	}
	if lakeCfg.Warehouse != "" {
		args = append(args, "--warehouse", lakeCfg.Warehouse)
	}
	if cfg.IngestKills > 0 {
		if err := proveIngestKills(ctx, cfg, &res, args, rng); err != nil {
			return res, err
		}
	}
	fracs := killFractions(cfg, rng)
	for k := range fracs {
		if err := proveKill(ctx, cfg, &res, args, k, fracs[k], rng); err != nil {
			return res, err
		}
	}
	return res, proveFinal(ctx, cfg, &res, src, args)
}

// proveSource starts the replay server holding the scenario (the loops,
// loop 0 resent, the violations) and records the backlog in res.
func proveSource(cfg ProveConfig, res *ProveResult) (*replay.Server, string, error) {
	src := replay.New(replay.Config{Seed: cfg.Seed, Rate: cfg.Rate, Restamp: true, ResumeAfter: true})
	url, err := src.Start("127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("start replay server: %w", err)
	}
	rec := replay.Generate(cfg.Seed, cfg.Sample)
	src.Loops(rec, cfg.Loops)
	if err := src.Resend(0); err != nil {
		src.Close()
		return nil, "", err
	}
	src.Violations(cfg.Violations)
	counts := src.Counts()
	res.Backlog = counts.OnTime + counts.Resent
	fmt.Fprintf(cfg.Out, "prove: seed %d, data %s\n", cfg.Seed, cfg.DataDir)
	fmt.Fprintf(cfg.Out, "prove: replay %s: %d loops x %d events, loop 0 resent, %d violations: backlog %s events\n",
		url, cfg.Loops, cfg.Sample, cfg.Violations, humanize.Count(res.Backlog))
	return src, url, nil
}

// proveKill runs the appliance once (run k) and kills it: at the fault
// hook cfg.CrashAt in the first run, else when about frac of the backlog
// is in bronze. A kill that did not land strictly inside the backlog is
// inconclusive. After the last kill with cfg.CheckpointLoss, it deletes
// bronze's checkpoint.
func proveKill(ctx context.Context, cfg ProveConfig, res *ProveResult, args []string, k int, frac float64, rng *rand.Rand) error {
	out := cfg.Out
	var env []string
	hook := ""
	if k == 0 && cfg.CrashAt != "" {
		hook = cfg.CrashAt
		skip := cfg.CrashSkip
		if skip <= 0 {
			skip = 1 + rng.Intn(3)
		}
		env = append(env, fmt.Sprintf("LAKEHOUSE_CRASH_AT=%s:%d", hook, skip))
	}
	// The child kills itself in the batch after the one that brings bronze
	// to target offsets, at a random moment of it (KillAtBronzeEnv): a
	// capped batch of a flat-out backlog takes 10 to 20 ms, less than a
	// status poll takes to answer on a loaded machine. The kill lands up to
	// two batches after the target (the batch that reaches it, then the one
	// it interrupts or, at the latest, follows), so each target is aimed
	// past the last kill with room for the kills after it (aimKill); a
	// test's fractions are kept.
	target := int64(frac * float64(res.Backlog))
	if len(cfg.KillFractions) == 0 {
		target = aimKill(cfg, res, k, rng)
	}
	if hook == "" && target > 0 {
		env = append(env, fmt.Sprintf("%s=%d", KillAtBronzeEnv, res.offsetsAt(target)))
	}
	c, err := startRun(ctx, cfg, args, env, k)
	if err != nil {
		return err
	}
	if hook != "" {
		fmt.Fprintf(out, "prove: run %d: waiting for fault hook %s\n", k+1, hook)
		if err := waitExit(ctx, c, cfg.DrainTimeout); err != nil {
			return err
		}
		if !c.SawFault(hook) {
			return fmt.Errorf("%w: fault hook %s did not fire (see %s)", ErrInconclusive, hook, c.LogPath())
		}
		res.Hook = hook
	} else {
		fmt.Fprintf(out, "prove: run %d: kill when about %s of %s events are in bronze\n", k+1, humanize.Count(target), humanize.Count(res.Backlog))
		bar := cfg.Progress.Start(progress.Task{Label: fmt.Sprintf("prove: run %d: bronze", k+1), Total: res.Backlog, Unit: "events"})
		err := killAt(ctx, c, target, cfg.DrainTimeout, bar)
		bar.Finish()
		if err != nil {
			return err
		}
	}
	if !c.KilledBySignal() {
		return fmt.Errorf("%w: run %d ended without SIGKILL (%v)", ErrInconclusive, k+1, c.Wait())
	}
	rows, err := bronzeRows(ctx, cfg.lake)
	if err != nil {
		return fmt.Errorf("count bronze after kill %d: %w", k+1, err)
	}
	res.KilledAt = append(res.KilledAt, rows)
	fmt.Fprintf(out, "prove: killed run %d with %s of %s events committed to bronze\n", k+1, humanize.Count(rows), humanize.Count(res.Backlog))
	if rows == 0 || rows >= res.Backlog {
		return fmt.Errorf("%w: kill %d landed with %d of %d events in bronze (must be strictly between)", ErrInconclusive, k+1, rows, res.Backlog)
	}
	if cfg.CheckpointLoss && k == killCount(cfg)-1 {
		dir := filepath.Join(cfg.DataDir, "checkpoints", "bronze")
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		fmt.Fprintf(out, "prove: deleted the bronze checkpoint %s\n", dir)
	}
	return nil
}

// proveFinal is the last run: late events, drain, clean stop, then the
// verifier against what the scenario expects (and, after a checkpoint
// loss, that the restarted appliance reported it).
func proveFinal(ctx context.Context, cfg ProveConfig, res *ProveResult, src *replay.Server, args []string) error {
	run := killCount(cfg) + 1
	c, err := startRun(ctx, cfg, args, nil, run-1)
	if err != nil {
		return err
	}
	src.Late(cfg.Late, cfg.LateAge)
	counts := src.Counts()
	var lateIDs []string
	for _, e := range src.Events(0) {
		if e.Kind == replay.KindLate && e.MetaID != "" {
			lateIDs = append(lateIDs, e.MetaID)
		}
	}
	res.Expect = Expect{
		Messages: counts.OnTime + counts.Resent + counts.Late,
		Silver:   counts.OnTimeEditNew,
		DLQ:      counts.Violations,
		LateIDs:  lateIDs,
	}
	fmt.Fprintf(cfg.Out, "prove: run %d: published %d late events; waiting for the pipeline to drain\n", run, cfg.Late)
	bar := cfg.Progress.Start(progress.Task{Label: fmt.Sprintf("prove: run %d: drain", run), Total: progress.Unknown})
	err = waitDrained(ctx, c, res.Expect.Messages, cfg.DrainTimeout, bar)
	bar.Finish()
	if err != nil {
		c.Kill()
		return err
	}
	if err := c.Stop(time.Minute); err != nil {
		return err
	}
	res.Report, err = RunDir(ctx, cfg.lake, cfg.brokerURL, res.Expect, cfg.Progress)
	if cfg.Kafka && (err == nil || errors.Is(err, ErrFailed)) {
		c, kerr := kafkaCheck(ctx, cfg)
		if kerr != nil {
			return kerr
		}
		res.Report.Checks = append(res.Report.Checks, c)
		if !c.OK && err == nil {
			err = fmt.Errorf("%w: %s", ErrFailed, c.Name)
		}
	}
	if err == nil && cfg.CheckpointLoss {
		// The lost checkpoint must not pass silently: the restarted
		// appliance reports the query-id change of bronze.
		logText, rerr := os.ReadFile(c.LogPath())
		reported := rerr == nil && strings.Contains(string(logText), "STREAM QUERY ID CHANGED") &&
			strings.Contains(string(logText), "query=bronze")
		res.Report.Checks = append(res.Report.Checks, Check{Name: "checkpoint-loss-reported", OK: reported,
			Detail: "the restarted appliance logs the bronze query-id change (" + c.LogPath() + ")"})
		if !reported {
			err = fmt.Errorf("%w: checkpoint-loss-reported", ErrFailed)
		}
	}
	fmt.Fprintln(cfg.Out, "prove: "+res.Summary())
	return err
}
