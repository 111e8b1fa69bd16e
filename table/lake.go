package table

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers the s3:// FileIO
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table/catalog"
)

// Defaults filled in by Open for zero Config fields.
const (
	// DefaultCommitRetries bounds CommitBatch's reload-recheck-retry loop
	// after lost compare-and-swap races.
	DefaultCommitRetries = 10
	// DefaultMinOrphanAge is the youngest file DeleteOrphanFiles may delete:
	// older than any commit could still be in flight.
	DefaultMinOrphanAge = time.Hour
	// DefaultLockTimeout bounds the wait for another process's lock on
	// catalog.db.
	DefaultLockTimeout = catalog.DefaultLockTimeout
)

// DefaultTableProps are set on every table this package creates (Config.Props
// overrides them). They turn on the maintenance a streaming sink needs:
// manifest merging once 16 manifests accumulate (with snapshots bounded by
// count, what costs is reading manifests: expiry's cleanup and compaction
// read every live one, each parsing its Avro schema, so merging once 16 have
// accumulated costs less than the reads it saves), deletion of superseded
// metadata files beyond the newest 5 (the metadata log is rewritten into
// every metadata.json, one a commit, and only a rollback by hand reads it),
// and no library retry (which would replay a commit blindly; CommitBatch
// retries itself).
var DefaultTableProps = map[string]string{
	icetable.PropertyFormatVersion:               "2",
	icetable.ManifestMergeEnabledKey:             "true",
	icetable.ManifestMinMergeCountKey:            "16", // see DefaultTableProps
	icetable.MetadataDeleteAfterCommitEnabledKey: "true",
	icetable.MetadataPreviousVersionsMaxKey:      "5",
	icetable.CommitNumRetriesKey:                 "0",
	icetable.WriteTargetFileSizeBytesKey:         "134217728", // 128 MiB
	icetable.ParquetRowGroupSizeBytesKey:         "16777216",  // 16 MiB
	icetable.ParquetPageRowLimitKey:              PageRowLimit,
	icetable.ParquetCompressionKey:               "zstd",
	icetable.ParquetCompressionLevelKey:          "1", // fastest: BenchmarkBronzeDrain +7..17 %, files +2 % vs level 3
	icetable.MinSnapshotsToKeepKey:               "1",
	"lakehouse.owner":                            "lakehouse/table",
}

// PageRowLimit is write.parquet.page-row-limit, which iceberg-go hands to
// the Parquet writer as its write batch: a page is cut at the data page size
// (1 MiB) but only checked after each such batch of values, so a page can
// hold up to 1 MiB plus PageRowLimit values. At iceberg-go's default of
// 20,000, 1,500 values of 200 KB made one 300 MB page, which the Parquet
// reader refuses (its limit is 256 MiB, DefaultMaxUncompressedPageSize): at
// 100, a page of the broker's largest records (1 MiB) stays under 101 MiB,
// of the largest events ingest passes (256 KiB) under 27 MiB, and pages of
// small values are still cut at 1 MiB (TestPagesBoundedWhateverTheBatch).
const PageRowLimit = "100"

// S3Config holds the S3 settings; main fills them from the standard AWS_*
// environment. Empty fields fall back to the AWS SDK's default chain.
type S3Config struct {
	Endpoint        string // e.g. http://127.0.0.1:9000; path-style addressing when set
	Region          string
	AccessKeyID     string
	SecretAccessKey string
}

// Config configures a Lake.
type Config struct {
	// Dir is the data directory; catalog.db lives here. Required.
	Dir string
	// Warehouse is where table files go: "" means file://<Dir>/warehouse,
	// or "file:///path", or "s3://bucket/prefix".
	Warehouse string
	// S3 is used when Warehouse is an s3:// URI.
	S3 S3Config
	// Catalog is the catalog the tables are in: "" for the embedded one
	// (Dir/catalog.db), or an Iceberg REST catalog as
	// "rest+http://host:port/path" (or rest+https://). Through REST the
	// catalog server decides where a new table's files go and performs each
	// commit's compare-and-swap; a moved data directory is not resolved.
	Catalog string
	// CatalogToken is the REST catalog's bearer token ("" for none).
	CatalogToken string
	// CatalogWarehouse is sent as the REST catalog's "warehouse" (the
	// catalog name of AWS Glue, S3 Tables, Polaris; "" for none).
	CatalogWarehouse string
	// FileCacheBytes bounds the local copies LocalFile keeps of a remote
	// warehouse's data files (DefaultFileCacheBytes when 0).
	FileCacheBytes int64
	// CatalogSigV4 signs the REST catalog's requests with AWS SigV4 for
	// this service ("glue", "s3tables"; "" for none), with S3's region and
	// keys (the AWS SDK's default chain when no keys are set).
	CatalogSigV4 string
	// Props are extra table properties and overrides of DefaultTableProps.
	Props map[string]string

	// CommitRetries bounds CommitBatch's retries after lost races
	// (DefaultCommitRetries when 0).
	CommitRetries int
	// MinOrphanAge is the minimum age DeleteOrphanFiles accepts
	// (DefaultMinOrphanAge when 0).
	MinOrphanAge time.Duration
	// LockTimeout bounds the wait for catalog.db's file lock
	// (DefaultLockTimeout when 0).
	LockTimeout time.Duration
	// TakeOverWarehouse makes this data directory the owner of a warehouse
	// outside it (S3, or a local --warehouse elsewhere) that another data
	// directory owns: for a data directory moved to another path or
	// machine. Without it such an Open fails with ErrWarehouseOwned.
	TakeOverWarehouse bool
	// RecentAppendBytes bounds the rows of its own latest appends a Lake
	// keeps in memory for TakeAppended (DefaultRecentAppendBytes when 0;
	// negative: none kept).
	RecentAppendBytes int64
	// OwnNamespaces are namespaces whose tables only the appliance writes,
	// beside those of Tables (the marts' gold and ops): their directories
	// under the warehouse are reserved, and their tables decide the
	// catalog's warehouse root. Tables of every other namespace are REST
	// clients' and follow the one location rule (clientloc.go).
	OwnNamespaces []string
	// ReadOnly opens an existing lake for reading only: nothing is created
	// or written (no directories, no warehouse probe, the catalog opened
	// read-only), and commits fail. For commands that only read.
	ReadOnly bool
}

// Lake is an open lakehouse: the catalog plus the warehouse. Its methods are
// safe for concurrent use, and several Lakes on one Dir in one process share
// the catalog safely.
type Lake struct {
	cfg       Config
	warehouse string // plain local path or s3:// URI
	props     map[string]string
	cat       catalogAPI
	catProps  iceberg.Properties // the warehouse's file IO settings
	rooted    *rootedFS          // the local FileIO (nil on S3 and through REST)
	guard     *locationGuard     // the location rule of clients' tables (nil through REST)
	files     *fileCache         // local copies of remote data files (LocalFile)
	s3        *s3Requests        // counts the S3 warehouse's requests (nil: not counted)

	notifyMu sync.Mutex
	notify   map[string]chan struct{} // ident -> closed at the next commit

	locks sync.Map // ident -> *sync.Mutex: one committer per table at a time in this Lake

	appendsMu sync.Mutex
	appends   map[string]appendHistory // ident -> main's appends of its current metadata file

	recent *recentAppends // rows of this Lake's latest appends, for TakeAppended

	leases leases // snapshots readers of other processes hold (lease.go)
}

// lockTable serialises the commits this Lake makes to ident (a stream's
// batch, compaction, expiry, an overwrite), so that they never lose the
// catalog's compare-and-swap to each other and a long maintenance commit
// is not starved by a busy stream. Commits by other Lakes or processes are
// still ordered by the compare-and-swap alone. It returns the unlock.
func (l *Lake) lockTable(ident string) func() {
	mu, _ := l.locks.LoadOrStore(ident, new(sync.Mutex))
	m := mu.(*sync.Mutex)
	m.Lock()
	return m.Unlock
}

// Committed returns a channel that is closed when a CommitBatch to ident
// through this Lake next commits. Readers in the same process use it to
// wake up at once instead of polling; commits by other processes are not
// signalled, so a reader still polls as a fallback.
func (l *Lake) Committed(ident string) <-chan struct{} {
	l.notifyMu.Lock()
	defer l.notifyMu.Unlock()
	if l.notify == nil {
		l.notify = map[string]chan struct{}{}
	}
	ch, ok := l.notify[ident]
	if !ok {
		ch = make(chan struct{})
		l.notify[ident] = ch
	}
	return ch
}

func (l *Lake) notifyCommit(ident string) {
	l.notifyMu.Lock()
	defer l.notifyMu.Unlock()
	if ch, ok := l.notify[ident]; ok {
		close(ch)
		delete(l.notify, ident)
	}
}

// Open opens (creating if needed) the catalog in cfg.Dir, installs the
// fsync-ing local FileIO and checks that the warehouse can be written. An
// unreachable or unwritable warehouse returns an error wrapping ErrWarehouse.
func Open(ctx context.Context, cfg Config) (*Lake, error) {
	if cfg.Dir == "" {
		return nil, errors.New("open lake: Config.Dir is required")
	}
	if cfg.CommitRetries <= 0 {
		cfg.CommitRetries = DefaultCommitRetries
	}
	if cfg.MinOrphanAge <= 0 {
		cfg.MinOrphanAge = DefaultMinOrphanAge
	}
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = DefaultLockTimeout
	}
	if cfg.RecentAppendBytes == 0 {
		cfg.RecentAppendBytes = DefaultRecentAppendBytes
	}
	registerDurableFS()
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("open lake: %w", err)
	}
	if !cfg.ReadOnly {
		if err := mkdirAllDurable(dir); err != nil {
			return nil, fmt.Errorf("open lake: %w", err)
		}
		if err := syncDirtyDirs(); err != nil {
			return nil, fmt.Errorf("open lake: %w", err)
		}
	}
	cfg.Dir = dir

	wh, catProps, err := warehouseProps(cfg)
	if err != nil {
		return nil, err
	}
	var s3 *s3Requests
	if cfg.Catalog == "" {
		if s3, err = newS3Requests(ctx, wh, catProps); err != nil {
			return nil, fmt.Errorf("open lake: %w: %s: %w", ErrWarehouse, wh, err)
		}
	}
	if !cfg.ReadOnly {
		if err := probeWarehouse(s3.with(ctx), wh, catProps); err != nil {
			return nil, err
		}
	}
	var cat catalogAPI
	var rooted *rootedFS
	var guard *locationGuard
	if cfg.Catalog != "" {
		if cat, err = openREST(ctx, cfg, catProps); err != nil {
			return nil, err
		}
	} else {
		opts := catalog.Options{Props: catProps, LockTimeout: cfg.LockTimeout, BeforeSwap: syncDirtyDirs, ReadOnly: cfg.ReadOnly}
		guard = &locationGuard{own: ownNamespaces(cfg.OwnNamespaces), wh: wh}
		opts.Owned, opts.Guard = guard.owned, guard
		if !strings.Contains(wh, "://") {
			rooted = newRootedFS(wh, wh) // the recorded root is known once the catalog is open
			opts.FileIO = rooted.open
			guard.rooted = rooted
		} else {
			opts.FileIO = func(ctx context.Context, loc string) (iceio.IO, error) {
				return reframingIO(iceio.LoadFS(s3.with(ctx), catProps, loc))
			}
		}
		emb, err := catalog.Open(ctx, filepath.Join(dir, "catalog.db"), opts)
		if err != nil {
			return nil, fmt.Errorf("open lake: %w", err)
		}
		if err := checkRoot(emb.Root(), wh, rooted); err != nil {
			_ = emb.Close()
			return nil, fmt.Errorf("open lake: %w", err)
		}
		cat = emb
	}
	if !cfg.ReadOnly && cfg.Catalog == "" {
		// Under the catalog's lock, so two processes on one data directory
		// do not both claim. Tables in a REST catalog are claimed by none:
		// the catalog orders every commit, so processes with their own
		// data directories (the roles) share them, and a query's commits
		// are fenced (Batch.Fenced).
		if err := claimWarehouse(s3.with(ctx), dir, wh, catProps, cfg.TakeOverWarehouse); err != nil {
			_ = cat.Close()
			return nil, fmt.Errorf("open lake: %w", err)
		}
	}
	props := maps.Clone(DefaultTableProps)
	maps.Copy(props, cfg.Props)
	files := newFileCache(cfg, catProps)
	files.s3 = s3
	return &Lake{cfg: cfg, warehouse: wh, props: props, cat: cat, catProps: catProps, rooted: rooted, guard: guard, files: files,
		s3: s3, recent: newRecentAppends(cfg.RecentAppendBytes)}, nil
}

// MovedFrom returns the warehouse directory this lake's tables were created
// in when it is not where the lake was opened (its data directory was copied
// or moved; the tables' files are read and written under Warehouse), and ""
// otherwise.
func (l *Lake) MovedFrom() string {
	if l.rooted == nil || !l.rooted.moved() {
		return ""
	}
	return l.rooted.recorded
}

// Close closes the catalog. Committed data is already durable.
func (l *Lake) Close() error {
	l.recent.close()
	l.files.close()
	return l.cat.Close()
}

// Warehouse returns the resolved warehouse root (a local path or s3:// URI).
func (l *Lake) Warehouse() string { return l.warehouse }

// Catalog returns the catalog the lake's tables are in, for serving it to
// other engines (table/restcatalog). Commits through it bypass the lake's
// per-table order and commit notices: serve the lake's own tables read-only.
func (l *Lake) Catalog() icecat.Catalog { return l.cat }

// ReaderConfig is the file IO configuration another engine needs to read
// the lake's files: the endpoint and region of an S3 warehouse, never its
// credentials; empty for local disk.
func (l *Lake) ReaderConfig() map[string]string {
	out := map[string]string{}
	props := l.catProps
	for _, k := range []string{iceio.S3EndpointURL, iceio.S3Region} {
		if v := props.Get(k, ""); v != "" {
			out[k] = v
		}
	}
	return out
}

// Tables returns every table of the lake as "namespace.name", sorted.
func (l *Lake) Tables(ctx context.Context) ([]string, error) {
	nss, err := l.cat.ListNamespaces(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var out []string
	for _, ns := range nss {
		for id, err := range l.cat.ListTables(ctx, ns) {
			if err != nil {
				return nil, fmt.Errorf("list tables of %s: %w", strings.Join(ns, "."), err)
			}
			out = append(out, strings.Join(id, "."))
		}
	}
	slices.Sort(out)
	return out, nil
}
