package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"syscall"
	"time"

	"lakehouse/broker"
	"lakehouse/ingest"
	"lakehouse/internal/diskbudget"
	"lakehouse/internal/fault"
	"lakehouse/internal/health"
	"lakehouse/internal/httpbound"
	"lakehouse/internal/recentchange"
	"lakehouse/internal/telemetry"
	"lakehouse/marts"
	"lakehouse/stream"
	"lakehouse/stream/sessions"
	"lakehouse/table"
)

// pipelineFlags are the settings of the running appliance (run, demo).
type pipelineFlags struct {
	common
	warehouse      string
	source         string
	since          string
	userAgent      string
	partitions     int
	trigger        time.Duration
	downTrigger    time.Duration
	sessTrigger    time.Duration
	maxOffsets     int64
	maxBytes       int64
	checkpointLoss string
	watermark      time.Duration
	maxEventAhead  time.Duration
	sessionGap     time.Duration
	sessionMax     time.Duration // as sessions.Config.MaxSessionLength: 0 the default, negative none
	refresh        time.Duration
	httpAddr       string
	httpRemote     bool
	httpToken      string
	httpBounds     httpbound.Bounds // --http-max-conns; the timeouts are tests' to change
	logFormat      string
	logLevel       string
	noIngest       bool
	role           string // roleAll, roleIngest, roleStream or roleMarts (app_roles.go)
	retention      time.Duration
	retentionBytes int64 // -1: retentionBytesAuto
	dlqRetention   time.Duration
	diskReserve    int64
	takeOver       bool
	opsRetention   time.Duration
	maxSnapshots   int
	keepSnapshots  int
	martsMemory    string // DuckDB memory_limit of the marts' jobs
	// maintainEvery and compactEvery override the marts' maintenance
	// intervals (tests; zero: the defaults).
	maintainEvery, compactEvery time.Duration
	// holdHistory names tables whose snapshots maintenance never expires
	// (the bench reads every snapshot of a phase after it ends).
	holdHistory []string
	// killAtBronze, when positive, kills the process once bronze has
	// committed that many offsets (LAKEHOUSE_KILL_AT_BRONZE, for prove).
	killAtBronze int64
}

// registerEventTime registers the two settings that decide which events
// silver keeps, for run and for verify (which must be told the same).
func registerEventTime(fs *flag.FlagSet, watermark, maxEventAhead *time.Duration) {
	fs.DurationVar(watermark, "watermark", 10*time.Minute, "silver watermark delay: events older than newest-seen minus this are dropped as late")
	fs.DurationVar(maxEventAhead, "max-event-ahead", recentchange.DefaultMaxAhead, "event time is bounded by intake time: an event whose timestamp is more than this ahead of its meta.dt, or whose meta.dt is more than this ahead of the broker's clock, goes to the DLQ (silver applies the same rule), so a bad clock never moves the watermark")
}

func (f *pipelineFlags) register(fs *flag.FlagSet) {
	f.common.register(fs)
	fs.StringVar(&f.warehouse, "warehouse", os.Getenv("LAKEHOUSE_WAREHOUSE"), "table storage: file:///path or s3://bucket/prefix (default <data>/warehouse; env LAKEHOUSE_WAREHOUSE; S3 settings from AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
	fs.BoolVar(&f.takeOver, "take-over-warehouse", false, "make this data directory the owner of a --warehouse outside it that another data directory owns (after moving the data directory to another path or machine; a copy must get its own warehouse instead)")
	fs.StringVar(&f.source, "source", ingest.DefaultURL, "SSE stream URL (Wikimedia EventStreams or a replay server)")
	fs.StringVar(&f.since, "since", "", "on a first start only: replay history from this RFC 3339 time")
	fs.StringVar(&f.userAgent, "user-agent", ingest.DefaultUserAgent, "User-Agent sent to the stream (Wikimedia asks for a descriptive one)")
	fs.IntVar(&f.partitions, "partitions", ingest.DefaultPartitions, "partitions of the recentchange topic (fixed when the topic is created)")
	fs.DurationVar(&f.trigger, "trigger", stream.DefaultTrigger, "processing-time trigger of the bronze query, which silver and sessions follow: how often the tables commit; also the longest an event waits in ingest's batch before its append to the broker. With an s3:// --warehouse the default is "+defaultS3Trigger.String()+": every commit costs object-store requests, so a longer trigger trades freshness for requests (docs/operations.md)")
	fs.DurationVar(&f.downTrigger, "downstream-trigger", 0, "processing-time trigger of silver and sessions (0: run as soon as the upstream table commits; they can never run more often than it does)")
	fs.DurationVar(&f.sessTrigger, "sessions-trigger", 10*time.Second, "processing-time trigger of sessions (0: as --downstream-trigger). A session is emitted only a gap plus the watermark after its last edit, so running on every silver commit would cost a commit a second for nothing")
	fs.Int64Var(&f.maxOffsets, "max-offsets-per-trigger", stream.DefaultMaxOffsetsPerTrigger, "cap on broker offsets one bronze batch covers (rows, for silver and sessions)")
	fs.Int64Var(&f.maxBytes, "max-bytes-per-trigger", stream.DefaultMaxBytesPerTrigger, "cap on the input bytes one batch of each query covers (record keys and values for bronze, rows in memory for silver and sessions); whole records, at least one; negative: no byte cap")
	fs.StringVar(&f.checkpointLoss, "checkpoint-loss", "rebuild", "when a query's checkpoint is lost: rebuild (position from the table's marker, no duplicates) or fresh (Spark's behaviour: new query id, re-read everything, DUPLICATES)")
	registerEventTime(fs, &f.watermark, &f.maxEventAhead)
	fs.DurationVar(&f.sessionGap, "session-gap", 30*time.Minute, "inactivity gap that ends an editor session")
	fs.Func("session-max", "longest an editor session may last, from its first edit to its last: an editor active for longer gets consecutive sessions; it must exceed --watermark; 0 or off: no maximum (default "+sessions.DefaultMaxSessionLength.String()+")", func(v string) error {
		if v == "off" || v == "0" {
			f.sessionMax = -1
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a positive duration, 0 or off, got %q", v)
		}
		f.sessionMax = d
		return nil
	})
	fs.DurationVar(&f.refresh, "refresh", 5*time.Minute, "gold marts and asset checks refresh interval (0 disables marts)")
	fs.StringVar(&f.httpAddr, "http", defaultHTTPAddr, "serve the dashboard, /metrics, /healthz, /readyz and /api/status on this address (off: none); a non-loopback address needs --http-remote and a token")
	fs.BoolVar(&f.httpRemote, "http-remote", false, "allow --http on a non-loopback address (every request then needs the bearer token)")
	fs.IntVar(&f.httpBounds.MaxConns, "http-max-conns", 0, "HTTP connections open at once at most; at the cap a new one closes the longest idle (0: a quarter of the open-file limit, 16 to 512)")
	fs.StringVar(&f.httpToken, "http-token", os.Getenv(envHTTPToken), "bearer token every HTTP request must carry (env "+envHTTPToken+"); required with --http-remote")
	fs.StringVar(&f.logFormat, "log-format", "auto", "log format: auto (JSON under the systemd journal, text otherwise), text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "least level logged: debug, info, warn or error")
	fs.BoolVar(&f.noIngest, "no-ingest", false, "run the streams and marts only (no SSE client)")
	fs.DurationVar(&f.retention, "retention", defaultRetention, "broker retention: trim recentchange records older than this, never past what bronze has committed (0: keep everything)")
	fs.Int64Var(&f.retentionBytes, "retention-bytes", retentionBytesAuto, "broker retention by size: trim the oldest recentchange records while the topic stores more than this many bytes (compressed), never past what bronze has committed (-1: a tenth of the size of the data directory's file system; 0: no size limit)")
	fs.DurationVar(&f.dlqRetention, "dlq-retention", 30*24*time.Hour, "trim dead-letter records older than this (0: keep everything)")
	fs.DurationVar(&f.opsRetention, "ops-retention", 7*24*time.Hour, "delete rows of the ops tables (ops.stream_progress, ops.runs, ops.asset_checks) older than this, hourly (0: keep everything)")
	fs.Int64Var(&f.diskReserve, "disk-reserve", defaultDiskReserve, "bytes kept free on the data directory's file system: below this, ingest stops storing (and reading) new events, so the queries can still drain what is stored; it resumes by itself once space is freed (0: no reserve)")
	fs.IntVar(&f.maxSnapshots, "max-snapshots", marts.DefaultMaxSnapshots, "a table holding more snapshots than this is expired down to --keep-snapshots (never past what a downstream query has not read)")
	fs.IntVar(&f.keepSnapshots, "keep-snapshots", marts.DefaultKeepSnapshots, "snapshots each table keeps after expiry")
	fs.StringVar(&f.martsMemory, "marts-memory", marts.DefaultDuckMemoryLimit, "DuckDB memory_limit of a marts refresh or check run (e.g. 64MB, 1GB); past it DuckDB spills to <data>/tmp/duckdb")
}

// defaultS3Trigger is --trigger's default on an S3 warehouse. Each bronze
// commit, and the silver and sessions commits that follow it, write a data
// file, a manifest, a manifest list and a metadata file per table and read
// metadata back, all of them billed requests on S3; commits once a second
// cost dozens of requests a second at the real rate. Thirty seconds cuts the
// requests per day by more than ten (commits are then fewer than the
// requests that do not depend on them: refreshes, maintenance, progress
// rows) and keeps an event's delay to silver within about a trigger, which
// a dashboard refreshed every few minutes does not notice.
const defaultS3Trigger = 30 * time.Second

// warehouseDefaults applies the defaults that depend on the warehouse, for
// the flags fs did not set explicitly: --trigger is defaultS3Trigger when
// --warehouse (or LAKEHOUSE_WAREHOUSE) names S3.
func (f *pipelineFlags) warehouseDefaults(fs *flag.FlagSet) {
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "trigger" })
	if !set && table.IsObjectStore(f.warehouse) {
		f.trigger = defaultS3Trigger
	}
}

// logger builds the appliance's logger: JSON lines when --log-format is
// json, or auto and stderr is the systemd journal (JOURNAL_STREAM names it);
// text otherwise. Warnings and errors are also kept for the dashboard.
func (f *pipelineFlags) logger(stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error: %w", f.logLevel, errUsage)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch f.logFormat {
	case "text":
		h = slog.NewTextHandler(stderr, opts)
	case "json":
		h = slog.NewJSONHandler(stderr, opts)
	case "auto":
		if toJournal(stderr) {
			h = slog.NewJSONHandler(stderr, opts)
		} else {
			h = slog.NewTextHandler(stderr, opts)
		}
	default:
		return nil, fmt.Errorf("--log-format %q: want auto, text or json: %w", f.logFormat, errUsage)
	}
	return slog.New(&telemetry.RingHandler{Next: h, Ring: telemetry.NewLogRing(50)}), nil
}

// toJournal reports whether w is the systemd journal's stream: systemd sets
// JOURNAL_STREAM to "device:inode" of the stderr it connected.
func toJournal(w io.Writer) bool {
	f, ok := w.(*os.File)
	js := os.Getenv("JOURNAL_STREAM")
	if !ok || js == "" {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && js == fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// downstream adapts a query's config for silver and sessions: they read
// committed snapshots of an upstream table, so by default they run as soon
// as it commits instead of waiting for a trigger phase of their own.
func (f *pipelineFlags) downstream(cfg stream.Config) stream.Config {
	cfg.Trigger = f.downTrigger
	if cfg.Trigger <= 0 {
		cfg.Trigger = -1 // no pause: the source's Wait blocks until the upstream commits
	}
	return cfg
}

func (f *pipelineFlags) streamConfig(name string, log *slog.Logger) (stream.Config, error) {
	cfg := stream.Config{
		Name:                 name,
		Trigger:              f.trigger,
		MaxOffsetsPerTrigger: f.maxOffsets,
		MaxBytesPerTrigger:   f.maxBytes,
		DataDir:              f.data,
		Logger:               log,
	}
	switch f.checkpointLoss {
	case "rebuild":
		cfg.OnCheckpointLoss = stream.RebuildFromTable
	case "fresh":
		cfg.OnCheckpointLoss = stream.StartFresh
	default:
		return cfg, fmt.Errorf("--checkpoint-loss %q: want rebuild or fresh", f.checkpointLoss)
	}
	return cfg, nil
}

// ingestConfig adapts ingest to the bronze trigger: an event may wait in
// ingest's batch for up to one trigger (ingest.Config.BatchDelay). Bronze
// starts a batch at most once per trigger, so an event appended sooner
// waits out the rest of the trigger in the broker instead; with the same
// bound, ingest's batches come a little over a trigger apart, bronze's
// trigger has always elapsed when one lands, and bronze starts on it at
// once (its source's Wait), silver on bronze's commit. The event waits no
// longer than before in all (the soak measured it shorter), and the broker
// takes one fsynced append per trigger instead of one per
// ingest.DefaultBatchDelay. A batch also ends at ingest.DefaultBatchMax
// events per second of the trigger (its bytes stay capped by
// ingest.DefaultBatchMaxBytes): at a long trigger (an S3 warehouse's) a
// fixed count would end it early at the real rate, just after bronze's
// batch began, and its events would wait most of another trigger in the
// broker.
func (f *pipelineFlags) ingestConfig(log *slog.Logger) ingest.Config {
	return ingest.Config{URL: f.source, UserAgent: f.userAgent, Partitions: f.partitions,
		MaxEventAhead: f.maxEventAhead, BatchDelay: f.trigger, BatchMax: ingestBatchMax(f.trigger), Logger: log}
}

// ingestBatchMax is ingest's count cap for a trigger: DefaultBatchMax per
// started second, DefaultBatchMax at least.
func ingestBatchMax(trigger time.Duration) int {
	secs := int((trigger + time.Second - 1) / time.Second)
	return ingest.DefaultBatchMax * max(1, secs)
}

// tableConfig builds the lake configuration; S3 settings come from the
// standard AWS environment variables.
func (c *common) tableConfig(warehouse string) table.Config {
	return table.Config{
		Dir:              c.data,
		Warehouse:        warehouse,
		Catalog:          c.catalog,
		CatalogToken:     c.catalogToken,
		CatalogWarehouse: c.catalogWarehouse,
		CatalogSigV4:     c.catalogSigV4,
		OwnNamespaces:    slices.Sorted(maps.Keys(ownNamespaces())),
		S3: table.S3Config{
			Endpoint:        os.Getenv("AWS_ENDPOINT_URL"),
			Region:          os.Getenv("AWS_REGION"),
			AccessKeyID:     os.Getenv("AWS_ACCESS_KEY_ID"),
			SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		},
	}
}

// readOnlyTableConfig is tableConfig for commands that only read: nothing
// is created or written.
func (c *common) readOnlyTableConfig(warehouse string) table.Config {
	cfg := c.tableConfig(warehouse)
	cfg.ReadOnly = true
	return cfg
}

// pipeline is the running appliance: broker, lake and the goroutines that
// move data between them.
type pipeline struct {
	flags pipelineFlags
	log   *slog.Logger
	db    broker.Log
	held  *broker.HeldCounter // the records each topic holds (Kafka's offsets skip)
	lake  *table.Lake         // nil for --role ingest

	tel     *telemetry.Telemetry
	health  *health.Checker
	disk    *diskbudget.Budget
	notify  notifier
	release *releaser // hands the heap back after a refresh or compaction

	mu         sync.Mutex
	httpURL    string             // base URL of the HTTP surface once it listens
	httpConns  *httpbound.Limiter // its connections (nil before)
	localConns *httpbound.Limiter // the local endpoint's connections (nil before)
	queries    map[string]*stream.Query
	ingest     *ingest.Ingester
	marts      *marts.Marts
}

func openPipeline(ctx context.Context, f pipelineFlags, log *slog.Logger) (*pipeline, error) {
	// Both stores are opened (and checked) before either is written to, so
	// a damaged one is refused with nothing changed.
	db, err := f.openBroker(ctx, broker.Options{DiskReserve: f.diskReserve, Compress: true}, f.runs(roleIngest) && !f.noIngest)
	if err != nil {
		return nil, err
	}
	var lake *table.Lake
	if f.needsLake() {
		tcfg := f.tableConfig(f.warehouse)
		tcfg.TakeOverWarehouse = f.takeOver
		if lake, err = table.Open(ctx, tcfg); err != nil {
			db.Close()
			return nil, err // says "open lake"
		}
		if from := lake.MovedFrom(); from != "" {
			log.Warn("data directory copied or moved: the table metadata names the warehouse it was created in; every file is read and written under this one, never there",
				"created_in", from, "warehouse", lake.Warehouse())
		}
	}
	closeAll := func() {
		if lake != nil {
			lake.Close()
		}
		db.Close()
	}
	for _, t := range []struct {
		name string
		n    int
	}{{ingest.DefaultTopic, f.partitions}, {ingest.DefaultDLQTopic, 1}} {
		if err := db.CreateTopic(ctx, t.name, t.n); err != nil {
			closeAll()
			return nil, err // says "create topic" and which
		}
	}
	if lake != nil {
		if err := lake.EnsureTables(ctx); err != nil {
			closeAll()
			return nil, fmt.Errorf("create tables: %w", err)
		}
	}
	tel := telemetry.New()
	if rh, ok := log.Handler().(*telemetry.RingHandler); ok {
		tel.Logs = rh.Ring
	}
	return &pipeline{flags: f, log: log, db: db, held: &broker.HeldCounter{Log: db}, lake: lake, release: newReleaser(), queries: map[string]*stream.Query{},
		tel: tel, health: health.New(health.DefaultRules, log), notify: notifier{log: log},
		disk: diskbudget.New(f.data, f.warehouse, f.diskReserve)}, nil
}

func (p *pipeline) Close() error {
	var err error
	if p.lake != nil {
		err = p.lake.Close()
	}
	return errors.Join(err, p.db.Close())
}

// run starts every component and waits until ctx is done or one of them
// fails; then it stops the others and returns the first error.
func (p *pipeline) run(ctx context.Context, stderr io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	start := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The label tags CPU profiles (bench --profile) by component.
			pprof.Do(ctx, pprof.Labels("component", name), func(ctx context.Context) {
				if err := fn(ctx); err != nil && ctx.Err() == nil {
					p.log.Error("component failed; stopping the appliance", "component", name, "err", err)
					cancel(fmt.Errorf("%s: %w", name, err))
				}
			})
		}()
	}
	if p.flags.httpAddr != "" {
		stopHTTP, err := p.serveHTTP(ctx, stderr)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	stopLocal, err := p.serveLocal(ctx)
	if err != nil {
		return err
	}
	defer stopLocal()
	// An error after a component started stops the started ones before it
	// returns: the caller closes the broker and the lake next.
	stopAll := func(err error) error {
		cancel(err)
		wg.Wait()
		return err
	}
	if p.flags.runs(roleIngest) && !p.flags.noIngest {
		icfg := p.flags.ingestConfig(p.log)
		if p.flags.since != "" {
			t, err := time.Parse(time.RFC3339, p.flags.since)
			if err != nil {
				return fmt.Errorf("--since %q: want RFC 3339: %w", p.flags.since, err)
			}
			icfg.Since = t
		}
		ing, err := ingest.New(p.db, icfg)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.ingest = ing
		p.mu.Unlock()
		start("ingest", ing.Run)
	}
	if p.flags.runs(roleStream) {
		if err := p.startStreams(ctx, start); err != nil {
			return stopAll(err)
		}
	}
	if p.flags.runs(roleMarts) {
		p.startMarts(start)
	}
	start("health", p.runHealth)
	go p.notifyReady(ctx)
	<-ctx.Done()
	p.notify.stopping()
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// streamConfig is the flags' configuration of query name, reporting each
// batch to the telemetry.
func (p *pipeline) streamConfig(name string) (stream.Config, error) {
	cfg, err := p.flags.streamConfig(name, p.log)
	cfg.OnBatch = p.tel.OnBatch(name)
	if name == stream.BronzeQuery && p.flags.killAtBronze > 0 {
		cfg.OnBatch = killAtBronze(p.flags.killAtBronze, cfg.OnBatch, fault.Kill)
	}
	return cfg, err
}

// components returns the ingester and the marts once started (nil before;
// the HTTP surface starts first).
func (p *pipeline) components() (*ingest.Ingester, *marts.Marts) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ingest, p.marts
}

func (p *pipeline) addQuery(name string, q *stream.Query) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queries[name] = q
}
