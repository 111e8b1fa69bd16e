package catalog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	icetable "github.com/apache/iceberg-go/table"
	bolt "go.etcd.io/bbolt"

	"lakehouse/internal/boltfile"
)

// Type is the catalog type this package reports.
const Type icecat.Type = "bbolt"

// DefaultLockTimeout is how long Open waits for another process's lock on
// catalog.db before failing.
const DefaultLockTimeout = boltfile.LockTimeout

// Options configure Open.
type Options struct {
	// Props are catalog properties: "warehouse" (the root for table
	// locations, unless the catalog already has tables at default locations
	// under another root: then that root, see Root) and the FileIO
	// properties (s3.endpoint, s3.region, ...) used to read and write
	// metadata and data files.
	Props iceberg.Properties
	// LockTimeout bounds the wait for another process's file lock
	// (DefaultLockTimeout when zero).
	LockTimeout time.Duration
	// BeforeSwap, if set, runs after a new metadata file is written and
	// before the pointer swap; an error aborts the commit (nothing swapped).
	// The table package uses it to fsync directories of new files.
	BeforeSwap func() error
	// ReadOnly opens an existing catalog without ever writing to it (a
	// shared lock; commits fail), for commands that only read.
	ReadOnly bool
	// FileIO, if set, opens every metadata and data file the catalog and
	// its tables read or write (default: iceberg-go's FileIO for the
	// location's scheme, with Props). The table package uses it to keep
	// every path inside the data directory, and on S3 to write manifests
	// every reader reads. Open does not call it.
	FileIO func(ctx context.Context, loc string) (iceio.IO, error)
	// Owned reports the namespaces whose tables belong to the catalog's
	// owner (the appliance's own): their default locations decide the
	// warehouse root, and only they may be under two roots at Open
	// (ErrSeveralRoots). A table of another namespace under a second root
	// is a Stray instead: Open still opens. Nil: every namespace is owned.
	Owned func(ns icetable.Identifier) bool
	// Guard, if set, checks where tables may put their files before a
	// create, staged create or commit writes anything, where a namespace's
	// "location" may point, and which files PurgeTable may delete.
	Guard Guard
}

// Guard checks the locations of a catalog whose tables have different
// owners (Options.Guard). Its errors should wrap ErrLocation (ErrReserved
// too for a location another owner holds) or ErrLimit (properties over its
// bounds); the catalog returns them wrapped, with nothing written.
type Guard interface {
	// CheckTable is asked with the metadata a create, staged create or
	// commit of ident is about to write.
	CheckTable(ident icetable.Identifier, meta icetable.Metadata) error
	// CheckNamespace is asked with the properties a namespace is about
	// to have (created or updated).
	CheckNamespace(ns icetable.Identifier, props iceberg.Properties) error
	// CheckDelete is asked before PurgeTable deletes path, a file of ident
	// whose last metadata is meta; an error keeps the file.
	CheckDelete(ident icetable.Identifier, meta icetable.Metadata, path string) error
}

// Catalog is the bbolt-backed catalog. It is safe for concurrent use.
type Catalog struct {
	db         *bolt.DB
	release    func() error
	props      iceberg.Properties
	beforeSwap func() error
	openIO     func(ctx context.Context, loc string) (iceio.IO, error) // nil: iceberg-go's
	ownedNS    func(ns icetable.Identifier) bool                       // nil: every namespace
	locGuard   Guard                                                   // nil: none

	mu    sync.Mutex
	cache map[string]cachedMeta // table key -> the metadata of its newest file
}

// cachedMeta is the metadata of a metadata file: parsed from it, or built
// by the commit that wrote it (built counts the commits since the last
// parse, see reparseEvery). Metadata files are immutable once written, so a
// cache keyed by location never returns stale content: the pointer itself
// is always read from bbolt.
type cachedMeta struct {
	loc   string
	meta  icetable.Metadata
	built int
}

var _ icecat.Catalog = (*Catalog)(nil)

// Open opens or creates the catalog file at path.
func Open(ctx context.Context, path string, opts Options) (*Catalog, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	db, release, err := acquireDB(path, opts.LockTimeout, opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	props := maps.Clone(opts.Props)
	if props == nil {
		props = iceberg.Properties{}
	}
	before := opts.BeforeSwap
	if before == nil {
		before = func() error { return nil }
	}
	c := &Catalog{db: db, release: release, props: props, beforeSwap: before, openIO: opts.FileIO,
		ownedNS: opts.Owned, locGuard: opts.Guard, cache: map[string]cachedMeta{}}
	if err := c.resolveRoot(ctx); err != nil {
		_ = release()
		return nil, fmt.Errorf("open catalog %s: %w", path, err)
	}
	return c, nil
}

// Close releases the catalog; the bbolt file is closed when the last Catalog
// on it in this process is closed.
func (c *Catalog) Close() error { return c.release() }

// Props returns a copy of the catalog properties (warehouse and IO settings).
func (c *Catalog) Props() iceberg.Properties { return maps.Clone(c.props) }

// CatalogType reports "bbolt".
func (c *Catalog) CatalogType() icecat.Type { return Type }

// nsKey encodes a namespace; components are joined with the unit separator
// so names containing dots stay unambiguous.
func nsKey(ns icetable.Identifier) []byte { return []byte(strings.Join(ns, "\x1f")) }

func nsFromKey(k []byte) icetable.Identifier { return strings.Split(string(k), "\x1f") }

func tableKey(ident icetable.Identifier) []byte {
	ns := icecat.NamespaceFromIdent(ident)
	return append(append(nsKey(ns), 0), icecat.TableNameFromIdent(ident)...)
}

func tablePrefix(ns icetable.Identifier) []byte { return append(nsKey(ns), 0) }

func identString(ident icetable.Identifier) string { return strings.Join(ident, ".") }

// view runs fn in a read transaction, honouring ctx cancellation at entry.
// Like update, it runs under boltfile.Guard: Open reads only the pages of
// catalog.db whose number does not grow with the file (meta, root,
// freelist), so a damaged page deeper in it is found by the first
// transaction that reads it, which is then an error naming the file (the
// transaction rolled back), never a crash.
func (c *Catalog) view(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.guard(func() error { return c.db.View(fn) })
}

func (c *Catalog) update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.guard(func() error { return c.db.Update(fn) })
}

func (c *Catalog) guard(fn func() error) error {
	err := boltfile.Guard(fn)
	if errors.Is(err, boltfile.ErrDamaged) {
		return fmt.Errorf("catalog %s: %w; the transaction was rolled back: %s", c.db.Path(), err, wayOut)
	}
	return err
}

// iterErr yields a single error.
func iterErr(err error) iter.Seq2[icetable.Identifier, error] {
	return func(yield func(icetable.Identifier, error) bool) { yield(nil, err) }
}

// fileIO returns the FileIO for a location with the catalog properties.
func (c *Catalog) fileIO(ctx context.Context, loc string) (iceio.IO, error) {
	if c.openIO != nil {
		return c.openIO(ctx, loc)
	}
	return iceio.LoadFS(ctx, c.props, loc)
}

func (c *Catalog) fsFunc(loc string) icetable.FSysF {
	if c.openIO != nil {
		return func(ctx context.Context) (iceio.IO, error) { return c.openIO(ctx, loc) }
	}
	return iceio.LoadFSFunc(c.props, loc)
}
