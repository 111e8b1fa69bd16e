package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"lakehouse/ingest"
	"lakehouse/internal/appliance"
	"lakehouse/internal/demo"
	"lakehouse/internal/fault"
	"lakehouse/internal/gcpace"
	"lakehouse/internal/recentchange"
	"lakehouse/internal/telemetry"
	"lakehouse/marts"
	"lakehouse/stream"
	"lakehouse/stream/sessions"
	"lakehouse/table"
)

// Environment variables read by the appliance (flags win over them).
const (
	envData = "LAKEHOUSE_DATA"
	// envCrashAt arms a fault hook: "name" or "name:skip" (the hook fires
	// on hit skip+1). Used by the kill tests and `prove --crash-at`.
	envCrashAt = "LAKEHOUSE_CRASH_AT"
)

const defaultDataDir = "./lakehouse-data"

// envIMDSDisabled is the AWS SDK's switch for the EC2 instance metadata
// service, which the appliance turns off unless it is set.
const envIMDSDisabled = "AWS_EC2_METADATA_DISABLED"

// defaultMemoryLimit is the Go runtime's soft memory limit when GOMEMLIMIT is
// not set: it makes the garbage collector work harder before the process
// passes 1 GiB. The silver dedup state at 10,000 events/s with a 10-minute
// watermark holds 12.6 million ids: peak RSS 974 MiB with this limit, 1,051
// MiB with 900 MiB, 1,336 MiB with none (BenchmarkDedupStateMemory). It is
// soft: the process is never killed for passing it.
const defaultMemoryLimit = 800 << 20

// defaultGCPercent is the garbage collector's GOGC when GOGC is not set.
// It is Go's default: the appliance runs for days at the real stream's
// rate, where the heap the collector lets grow beyond the live data is most
// of its footprint (200 peaks far higher there, for no CPU saved). At high
// rates 200 spends less CPU on garbage collection, for a higher peak RSS;
// set GOGC=200 for a bulk backfill. Either way
// internal/gcpace gives a small heap at least gcpace.DefaultFloor of
// headroom, so a process holding little is not collected every second.
const defaultGCPercent = 100

// applyRuntimeDefaults sets the memory limit and GC percent unless the
// environment sets them (GOMEMLIMIT, GOGC).
func applyRuntimeDefaults() {
	if os.Getenv(envIMDSDisabled) == "" {
		// Without S3 credentials the AWS SDK would ask the EC2 instance
		// metadata service (169.254.169.254), a request off this machine
		// nobody asked for. Set AWS_EC2_METADATA_DISABLED=false to use an
		// instance role.
		_ = os.Setenv(envIMDSDisabled, "true")
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	base := defaultGCPercent
	if os.Getenv("GOGC") != "" {
		base = gcpace.Current() // as the runtime read it; off stays off
	}
	gcpace.Start(base, gcpace.DefaultFloor)
}

// The REST catalog's settings in the environment.
const (
	envCatalog          = "LAKEHOUSE_CATALOG"
	envCatalogToken     = "LAKEHOUSE_CATALOG_TOKEN"
	envCatalogWarehouse = "LAKEHOUSE_CATALOG_WAREHOUSE"
	envCatalogSigV4     = "LAKEHOUSE_CATALOG_SIGV4"
)

// registerStore registers the flags of where the data lives, which every
// command that touches the lake takes; the object store's settings come
// from the standard AWS variables.
func registerStore(fs *flag.FlagSet, c *appliance.Store) {
	c.S3 = table.S3Config{
		Endpoint:        os.Getenv("AWS_ENDPOINT_URL"),
		Region:          os.Getenv("AWS_REGION"),
		AccessKeyID:     os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
	}
	def := defaultDataDir
	if v := os.Getenv(envData); v != "" {
		def = v
	}
	fs.StringVar(&c.Data, "data", def, "data directory: broker.db, catalog.db, checkpoints/, warehouse/ (env "+envData+")")
	fs.StringVar(&c.Catalog, "catalog", os.Getenv(envCatalog), "the tables' catalog: empty for <data>/catalog.db, or an Iceberg REST catalog as rest+http://host:port/path or rest+https://... (env "+envCatalog+")")
	fs.StringVar(&c.CatalogToken, "catalog-token", os.Getenv(envCatalogToken), "bearer token of the REST catalog (env "+envCatalogToken+")")
	fs.StringVar(&c.CatalogSigV4, "catalog-sigv4", os.Getenv(envCatalogSigV4), "sign the REST catalog's requests with AWS SigV4 for this service: glue (AWS Glue's Iceberg endpoint) or s3tables; region and keys from the AWS_* variables (env "+envCatalogSigV4+")")
	fs.StringVar(&c.BrokerURL, "broker", os.Getenv(envBroker), "the broker: empty for <data>/broker.db (embedded), or a Kafka cluster as kafka://host:port[,host:port...], kafkas://... for TLS, user:password@ and ?sasl=plain|scram-sha-256|scram-sha-512 for SASL (env "+envBroker+")")
	fs.StringVar(&c.CatalogWarehouse, "catalog-warehouse", os.Getenv(envCatalogWarehouse), "the REST catalog's warehouse (catalog name) parameter, for catalogs that need one (env "+envCatalogWarehouse+")")
}

// armFaultsFromEnv arms the crash hook LAKEHOUSE_CRASH_AT names
// ("hook[:skip]"; prove and the kill tests set it for their children). A
// name no package registered, or a skip that is not a count, is an error:
// a mistyped hook would otherwise run a kill test that never kills. An
// armed hook is announced on stderr, since the process will SIGKILL itself.
func armFaultsFromEnv(stderr io.Writer) error {
	v := os.Getenv(envCrashAt)
	if v == "" {
		return nil
	}
	name, skip, err := fault.ArmSpec(v)
	if err != nil {
		return fmt.Errorf("%s=%w: %w", envCrashAt, err, errUsage)
	}
	fmt.Fprintf(stderr, "lakehouse: %s is set: this process will SIGKILL itself at hook %s (after %d hits); for kill tests and prove only\n", envCrashAt, name, skip)
	return nil
}

// orDemo points a command that reads a lake at the demo's when no data
// directory was chosen (neither --data nor LAKEHOUSE_DATA), there is no
// ./lakehouse-data and the demo made ./lakehouse-demo: after `lakehouse
// demo`, `lakehouse query ...` reads what it wrote. It says so on stderr.
func orDemo(c *appliance.Store, fs *flag.FlagSet, stderr io.Writer) {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "data" })
	if set || os.Getenv(envData) != "" || c.Data != defaultDataDir {
		return
	}
	if _, err := os.Stat(defaultDataDir); !errors.Is(err, iofs.ErrNotExist) {
		return
	}
	if _, err := os.Stat(filepath.Join(demo.DefaultDir, demo.Marker)); err != nil {
		return
	}
	c.Data = demo.DefaultDir
	fmt.Fprintf(stderr, "lakehouse: no %s here: reading the demo's lake in %s (--data chooses another)\n", defaultDataDir, demo.DefaultDir)
}

// envRole is --role in the environment.
const envRole = "LAKEHOUSE_ROLE"

// envOr is the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// envBroker is --broker in the environment.
const envBroker = "LAKEHOUSE_BROKER"

// registerEventTime registers the two settings that decide which events
// silver keeps, for run and for verify (which must be told the same).
func registerEventTime(fs *flag.FlagSet, watermark, maxEventAhead *time.Duration) {
	fs.DurationVar(watermark, "watermark", 10*time.Minute, "silver watermark delay: events older than newest-seen minus this are dropped as late")
	fs.DurationVar(maxEventAhead, "max-event-ahead", recentchange.DefaultMaxAhead, "event time is bounded by intake time: an event whose timestamp is more than this ahead of its meta.dt, or whose meta.dt is more than this ahead of the broker's clock, goes to the DLQ (silver applies the same rule), so a bad clock never moves the watermark")
}

// pipelineFlags are the flags of the commands that run the appliance (run,
// demo): its Config, and the settings of its logger.
type pipelineFlags struct {
	appliance.Config
	logFormat, logLevel string
}

func (f *pipelineFlags) register(fs *flag.FlagSet) {
	registerStore(fs, &f.Store)
	f.Version = buildVersion()
	fs.StringVar(&f.Warehouse, "warehouse", os.Getenv("LAKEHOUSE_WAREHOUSE"), "table storage: file:///path or s3://bucket/prefix (default <data>/warehouse; env LAKEHOUSE_WAREHOUSE; S3 settings from AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
	fs.BoolVar(&f.TakeOverWarehouse, "take-over-warehouse", false, "make this data directory the owner of a --warehouse outside it that another data directory owns (after moving the data directory to another path or machine; a copy must get its own warehouse instead)")
	fs.StringVar(&f.Source, "source", ingest.DefaultURL, "SSE stream URL (Wikimedia EventStreams or a replay server)")
	fs.StringVar(&f.Since, "since", "", "on a first start only: replay history from this RFC 3339 time")
	fs.StringVar(&f.UserAgent, "user-agent", ingest.DefaultUserAgent, "User-Agent sent to the stream (Wikimedia asks for a descriptive one)")
	fs.IntVar(&f.Partitions, "partitions", ingest.DefaultPartitions, "partitions of the recentchange topic (fixed when the topic is created)")
	fs.DurationVar(&f.Trigger, "trigger", stream.DefaultTrigger, "processing-time trigger of the bronze query, which silver and sessions follow: how often the tables commit; also the longest an event waits in ingest's batch before its append to the broker. With an s3:// --warehouse the default is "+appliance.DefaultS3Trigger.String()+": every commit costs object-store requests, so a longer trigger trades freshness for requests (docs/operations.md)")
	fs.DurationVar(&f.DownstreamTrigger, "downstream-trigger", 0, "processing-time trigger of silver and sessions (0: run as soon as the upstream table commits; they can never run more often than it does)")
	fs.DurationVar(&f.SessionsTrigger, "sessions-trigger", 10*time.Second, "processing-time trigger of sessions (0: as --downstream-trigger). A session is emitted only a gap plus the watermark after its last edit, so running on every silver commit would cost a commit a second for nothing")
	fs.Int64Var(&f.MaxOffsetsPerTrigger, "max-offsets-per-trigger", stream.DefaultMaxOffsetsPerTrigger, "cap on broker offsets one bronze batch covers (rows, for silver and sessions)")
	fs.Int64Var(&f.MaxBytesPerTrigger, "max-bytes-per-trigger", stream.DefaultMaxBytesPerTrigger, "cap on the input bytes one batch of each query covers (record keys and values for bronze, rows in memory for silver and sessions); whole records, at least one; negative: no byte cap")
	fs.StringVar(&f.CheckpointLoss, "checkpoint-loss", "rebuild", "when a query's checkpoint is lost: rebuild (position from the table's marker, no duplicates) or fresh (Spark's behaviour: new query id, re-read everything, DUPLICATES)")
	registerEventTime(fs, &f.Watermark, &f.MaxEventAhead)
	fs.DurationVar(&f.SessionGap, "session-gap", 30*time.Minute, "inactivity gap that ends an editor session")
	fs.Func("session-max", "longest an editor session may last, from its first edit to its last: an editor active for longer gets consecutive sessions; it must exceed --watermark; 0 or off: no maximum (default "+sessions.DefaultMaxSessionLength.String()+")", func(v string) error {
		if v == "off" || v == "0" {
			f.SessionMax = -1
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a positive duration, 0 or off, got %q", v)
		}
		f.SessionMax = d
		return nil
	})
	fs.DurationVar(&f.Refresh, "refresh", 5*time.Minute, "gold marts and asset checks refresh interval (0 disables marts)")
	fs.StringVar(&f.HTTPAddr, "http", defaultHTTPAddr, "serve the dashboard, /metrics, /healthz, /readyz and /api/status on this address (off: none); a non-loopback address needs --http-remote and a token")
	fs.BoolVar(&f.HTTPRemote, "http-remote", false, "allow --http on a non-loopback address (every request then needs the bearer token)")
	fs.IntVar(&f.HTTPBounds.MaxConns, "http-max-conns", 0, "HTTP connections open at once at most; at the cap a new one closes the longest idle (0: a quarter of the open-file limit, 16 to 512)")
	fs.StringVar(&f.HTTPToken, "http-token", os.Getenv(envHTTPToken), "bearer token every HTTP request must carry (env "+envHTTPToken+"); required with --http-remote")
	fs.StringVar(&f.logFormat, "log-format", "auto", "log format: auto (JSON under the systemd journal, text otherwise), text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "least level logged: debug, info, warn or error")
	fs.BoolVar(&f.NoIngest, "no-ingest", false, "run the streams and marts only (no SSE client)")
	fs.DurationVar(&f.Retention, "retention", appliance.DefaultRetention, "broker retention: trim recentchange records older than this, never past what bronze has committed (0: keep everything)")
	fs.Int64Var(&f.RetentionBytes, "retention-bytes", appliance.RetentionBytesAuto, "broker retention by size: trim the oldest recentchange records while the topic stores more than this many bytes (compressed), never past what bronze has committed (-1: a tenth of the size of the data directory's file system; 0: no size limit)")
	fs.DurationVar(&f.DLQRetention, "dlq-retention", 30*24*time.Hour, "trim dead-letter records older than this (0: keep everything)")
	fs.DurationVar(&f.OpsRetention, "ops-retention", 7*24*time.Hour, "delete rows of the ops tables (ops.stream_progress, ops.runs, ops.asset_checks) older than this, hourly (0: keep everything)")
	fs.Int64Var(&f.DiskReserve, "disk-reserve", appliance.DefaultDiskReserve, "bytes kept free on the data directory's file system: below this, ingest stops storing (and reading) new events, so the queries can still drain what is stored; it resumes by itself once space is freed (0: no reserve)")
	fs.IntVar(&f.MaxSnapshots, "max-snapshots", marts.DefaultMaxSnapshots, "a table holding more snapshots than this is expired down to --keep-snapshots (never past what a downstream query has not read)")
	fs.IntVar(&f.KeepSnapshots, "keep-snapshots", marts.DefaultKeepSnapshots, "snapshots each table keeps after expiry")
	fs.StringVar(&f.Models, "models", os.Getenv("LAKEHOUSE_MODELS"), "directory of your own gold marts: one SQL file per model, built incrementally after the built-in marts by every refresh (docs/models.md; env LAKEHOUSE_MODELS)")
	fs.StringVar(&f.MartsMemory, "marts-memory", marts.DefaultDuckMemoryLimit, "DuckDB memory_limit of a marts refresh or check run (e.g. 64MB, 1GB); past it DuckDB spills to <data>/tmp/duckdb")
}

// warehouseDefaults applies the defaults that depend on the warehouse, for
// the flags fs did not set explicitly: --trigger is defaultS3Trigger when
// --warehouse (or LAKEHOUSE_WAREHOUSE) names S3.
func (f *pipelineFlags) warehouseDefaults(fs *flag.FlagSet) {
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "trigger" })
	if !set && table.IsObjectStore(f.Warehouse) {
		f.Trigger = appliance.DefaultS3Trigger
	}
}

// logger builds the appliance's logger on stderr (telemetry.NewLogger),
// JSON under the systemd journal when --log-format is auto.
func (f *pipelineFlags) logger(stderr io.Writer) (*slog.Logger, error) {
	log, err := telemetry.NewLogger(stderr, f.logFormat, f.logLevel, toJournal(stderr))
	if err != nil {
		return nil, fmt.Errorf("--%w: %w", err, errUsage)
	}
	return log, nil
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
