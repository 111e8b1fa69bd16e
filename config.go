package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"lakehouse/internal/fault"
	"lakehouse/internal/gcpace"
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

// common holds the flags every command that touches the lake shares.
type common struct {
	data string
	// catalog, catalogToken, catalogWarehouse: an Iceberg REST catalog
	// instead of catalog.db (table.Config's Catalog fields).
	catalog, catalogToken, catalogWarehouse, catalogSigV4 string
	// brokerURL: a Kafka cluster (kafka://...) instead of broker.db.
	brokerURL string
}

// The REST catalog's settings in the environment.
const (
	envCatalog          = "LAKEHOUSE_CATALOG"
	envCatalogToken     = "LAKEHOUSE_CATALOG_TOKEN"
	envCatalogWarehouse = "LAKEHOUSE_CATALOG_WAREHOUSE"
	envCatalogSigV4     = "LAKEHOUSE_CATALOG_SIGV4"
)

func (c *common) register(fs *flag.FlagSet) {
	def := defaultDataDir
	if v := os.Getenv(envData); v != "" {
		def = v
	}
	fs.StringVar(&c.data, "data", def, "data directory: broker.db, catalog.db, checkpoints/, warehouse/ (env "+envData+")")
	fs.StringVar(&c.catalog, "catalog", os.Getenv(envCatalog), "the tables' catalog: empty for <data>/catalog.db, or an Iceberg REST catalog as rest+http://host:port/path or rest+https://... (env "+envCatalog+")")
	fs.StringVar(&c.catalogToken, "catalog-token", os.Getenv(envCatalogToken), "bearer token of the REST catalog (env "+envCatalogToken+")")
	fs.StringVar(&c.catalogSigV4, "catalog-sigv4", os.Getenv(envCatalogSigV4), "sign the REST catalog's requests with AWS SigV4 for this service: glue (AWS Glue's Iceberg endpoint) or s3tables; region and keys from the AWS_* variables (env "+envCatalogSigV4+")")
	fs.StringVar(&c.brokerURL, "broker", os.Getenv(envBroker), "the broker: empty for <data>/broker.db (embedded), or a Kafka cluster as kafka://host:port[,host:port...], kafkas://... for TLS, user:password@ and ?sasl=plain|scram-sha-256|scram-sha-512 for SASL (env "+envBroker+")")
	fs.StringVar(&c.catalogWarehouse, "catalog-warehouse", os.Getenv(envCatalogWarehouse), "the REST catalog's warehouse (catalog name) parameter, for catalogs that need one (env "+envCatalogWarehouse+")")
}

func (c *common) brokerPath() string { return filepath.Join(c.data, "broker.db") }

// defaultDiskReserve is --disk-reserve's default: room for the queries to
// drain a full broker's worth of batches into the warehouse.
const defaultDiskReserve = 128 << 20

// defaultRetention is --retention's default: a week of the broker's
// records, the past `reland` can replay.
const defaultRetention = 7 * 24 * time.Hour

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
	name, skipS, hasSkip := strings.Cut(v, ":")
	skip := 0
	if hasSkip {
		n, err := strconv.Atoi(skipS)
		if err != nil || n < 0 {
			return fmt.Errorf("%s=%q: the skip after the colon must be a count of hits, 0 or more: %w", envCrashAt, v, errUsage)
		}
		skip = n
	}
	var names []string
	for _, k := range fault.Known() {
		names = append(names, k[0])
	}
	if !slices.Contains(names, name) {
		return fmt.Errorf("%s=%q: no crash hook is named %q (known: %s): %w", envCrashAt, v, name, strings.Join(names, ", "), errUsage)
	}
	fault.Arm(name, skip)
	fmt.Fprintf(stderr, "lakehouse: %s is set: this process will SIGKILL itself at hook %s (after %d hits); for kill tests and prove only\n", envCrashAt, name, skip)
	return nil
}

// orDemo points a command that reads a lake at the demo's when no data
// directory was chosen (neither --data nor LAKEHOUSE_DATA), there is no
// ./lakehouse-data and the demo made ./lakehouse-demo: after `lakehouse
// demo`, `lakehouse query ...` reads what it wrote. It says so on stderr.
func (c *common) orDemo(fs *flag.FlagSet, stderr io.Writer) {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "data" })
	if set || os.Getenv(envData) != "" || c.data != defaultDataDir {
		return
	}
	if _, err := os.Stat(defaultDataDir); !errors.Is(err, iofs.ErrNotExist) {
		return
	}
	if _, err := os.Stat(filepath.Join(defaultDemoDir, demoMarker)); err != nil {
		return
	}
	c.data = defaultDemoDir
	fmt.Fprintf(stderr, "lakehouse: no %s here: reading the demo's lake in %s (--data chooses another)\n", defaultDataDir, defaultDemoDir)
}
