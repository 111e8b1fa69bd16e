package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
	bolt "go.etcd.io/bbolt"

	"lakehouse/internal/fault"
)

// FailSwap is the failure point tests arm to make a commit fail where it
// would swap the pointer (as a full disk failing bbolt's write would),
// after the new metadata file was written.
const FailSwap = "catalog.swap"

// tableEntry is the value stored per table: the pointer the commit swaps.
type tableEntry struct {
	MetadataLocation         string `json:"metadata-location"`
	PreviousMetadataLocation string `json:"previous-metadata-location,omitempty"`
}

func getTable(tx *bolt.Tx, ident icetable.Identifier) (tableEntry, bool, error) {
	raw := tx.Bucket(bucketTables).Get(tableKey(ident))
	if raw == nil {
		return tableEntry{}, false, nil
	}
	var e tableEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, true, fmt.Errorf("decode table entry %s: %w", identString(ident), err)
	}
	return e, true, nil
}

func putTable(tx *bolt.Tx, ident icetable.Identifier, e tableEntry) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode table entry %s: %w", identString(ident), err)
	}
	return tx.Bucket(bucketTables).Put(tableKey(ident), raw)
}

// CheckTableExists reports whether ident names a table.
func (c *Catalog) CheckTableExists(ctx context.Context, ident icetable.Identifier) (bool, error) {
	if icecat.ValidateTableIdentifier(ident) != nil {
		return false, nil
	}
	var ok bool
	err := c.view(ctx, func(tx *bolt.Tx) error {
		var err error
		_, ok, err = getTable(tx, ident)
		return err
	})
	return ok, err
}

// ListTables lists the tables directly in namespace ns.
func (c *Catalog) ListTables(ctx context.Context, ns icetable.Identifier) iter.Seq2[icetable.Identifier, error] {
	var out []icetable.Identifier
	err := c.view(ctx, func(tx *bolt.Tx) error {
		if _, ok, err := getNamespace(tx, ns); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: %s", icecat.ErrNoSuchNamespace, identString(ns))
		}
		prefix := tablePrefix(ns)
		cur := tx.Bucket(bucketTables).Cursor()
		for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
			id := append(append(icetable.Identifier{}, ns...), string(k[len(prefix):]))
			out = append(out, id)
		}
		return nil
	})
	if err != nil {
		return iterErr(err)
	}
	return func(yield func(icetable.Identifier, error) bool) {
		for _, id := range out {
			if !yield(id, nil) {
				return
			}
		}
	}
}

// MetadataLocation returns where ident's current metadata file is, as the
// catalog's pointer names it.
func (c *Catalog) MetadataLocation(ctx context.Context, ident icetable.Identifier) (string, error) {
	return c.pointer(ctx, ident)
}

// pointer reads the current metadata location of ident.
func (c *Catalog) pointer(ctx context.Context, ident icetable.Identifier) (string, error) {
	var loc string
	err := c.view(ctx, func(tx *bolt.Tx) error {
		e, ok, err := getTable(tx, ident)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", icecat.ErrNoSuchTable, identString(ident))
		}
		loc = e.MetadataLocation
		return nil
	})
	return loc, err
}

// LoadTable reads the table pointer from bbolt (never cached) and returns the
// table at that metadata file. It returns catalog.ErrNoSuchTable when the
// table (or its namespace) does not exist.
func (c *Catalog) LoadTable(ctx context.Context, ident icetable.Identifier) (*icetable.Table, error) {
	if err := icecat.ValidateTableIdentifier(ident); err != nil {
		return nil, err
	}
	loc, err := c.pointer(ctx, ident)
	if err != nil {
		return nil, err
	}
	key := string(tableKey(ident))
	c.mu.Lock()
	cm, hit := c.cache[key]
	c.mu.Unlock()
	if hit && cm.loc == loc {
		return icetable.New(ident, cm.meta, loc, c.fsFunc(loc), c), nil
	}
	tbl, err := icetable.NewFromLocation(ctx, ident, loc, c.fsFunc(loc), c)
	if err != nil {
		return nil, fmt.Errorf("load table %s from %s: %w", identString(ident), loc, err)
	}
	c.remember(key, loc, tbl.Metadata(), 0)
	return tbl, nil
}

func (c *Catalog) remember(key, loc string, meta icetable.Metadata, built int) {
	c.mu.Lock()
	c.cache[key] = cachedMeta{loc: loc, meta: meta, built: built}
	c.mu.Unlock()
}

// builtSince returns how many commits in a row built the cached metadata of
// key at loc without a parse (0 when the cache holds another location).
func (c *Catalog) builtSince(key, loc string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cm, ok := c.cache[key]; ok && cm.loc == loc {
		return cm.built
	}
	return 0
}

// reparseEvery bounds how many commits in a row hand back the metadata
// iceberg-go's builder produced before one hands back the metadata parsed
// from the file just written. A built metadata keeps the version it was
// built from reachable, so keeping every commit's result held every version
// of every table (live heap growing with the square of the snapshot count:
// 556 MiB after 600 commits of one table, 8 MiB when each was parsed;
// TestCommitHeapFlat). Parsing each commit's file cut the chain but was 6 %
// of the appliance's CPU at 35 ev/s; a parse every reparseEvery commits
// bounds the chain to that many versions.
const reparseEvery = 16

// CreateTable creates a table in an existing namespace. The location is the
// CreateTableOpt location, else the namespace's "location" property plus the
// table name, else <warehouse>/<namespace>.db/<name>.
func (c *Catalog) CreateTable(ctx context.Context, ident icetable.Identifier, sc *iceberg.Schema,
	opts ...icecat.CreateTableOpt,
) (*icetable.Table, error) {
	meta, err := c.StageTable(ctx, ident, sc, opts...)
	if err != nil {
		return nil, err
	}
	metaLoc, err := newMetadataLocation(meta, 0)
	if err != nil {
		return nil, err
	}
	if err := c.checkRoot(ident, metaLoc); err != nil {
		return nil, fmt.Errorf("create table %s: %w", identString(ident), err)
	}
	if _, err := c.writeMetadata(ctx, meta, metaLoc); err != nil {
		return nil, err
	}
	if err := c.beforeSwap(); err != nil {
		c.removeQuietly(ctx, metaLoc)
		return nil, fmt.Errorf("create table %s: %w", identString(ident), err)
	}
	ns := icecat.NamespaceFromIdent(ident)
	err = c.update(ctx, func(tx *bolt.Tx) error {
		if _, ok, err := getNamespace(tx, ns); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: %s", icecat.ErrNoSuchNamespace, identString(ns))
		}
		if _, ok, err := getTable(tx, ident); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%w: %s", icecat.ErrTableAlreadyExists, identString(ident))
		}
		return putTable(tx, ident, tableEntry{MetadataLocation: metaLoc})
	})
	if err != nil {
		c.removeQuietly(ctx, metaLoc)
		return nil, err
	}
	return c.LoadTable(ctx, ident)
}

// StageTable returns the metadata CreateTable would write for ident, and
// writes nothing: the first half of a staged create (the Iceberg REST
// "stage-create"), which a commit asserting that the table does not exist
// then creates. It fails as CreateTable does when the namespace is missing
// or the table exists.
func (c *Catalog) StageTable(ctx context.Context, ident icetable.Identifier, sc *iceberg.Schema,
	opts ...icecat.CreateTableOpt,
) (icetable.Metadata, error) {
	if err := icecat.ValidateTableIdentifier(ident); err != nil {
		return nil, err
	}
	cfg := icecat.NewCreateTableCfg()
	for _, o := range opts {
		o(&cfg)
	}
	nsProps, err := c.LoadNamespaceProperties(ctx, icecat.NamespaceFromIdent(ident))
	if err != nil {
		return nil, err
	}
	if exists, err := c.CheckTableExists(ctx, ident); err != nil {
		return nil, err
	} else if exists {
		return nil, fmt.Errorf("%w: %s", icecat.ErrTableAlreadyExists, identString(ident))
	}
	loc, err := c.tableLocation(cfg.Location, ident, nsProps)
	if err != nil {
		return nil, err
	}
	meta, err := icetable.NewMetadata(sc, cfg.PartitionSpec, cfg.SortOrder, loc, cfg.Properties)
	if err != nil {
		return nil, fmt.Errorf("create table metadata: %w: %w", ErrInvalidCommit, err)
	}
	if err := c.checkTable(ident, meta); err != nil {
		return nil, fmt.Errorf("create table %s: %w", identString(ident), err)
	}
	return meta, nil
}

func (c *Catalog) tableLocation(explicit string, ident icetable.Identifier, nsProps iceberg.Properties) (string, error) {
	if explicit != "" {
		return strings.TrimSuffix(explicit, "/"), nil
	}
	name := icecat.TableNameFromIdent(ident)
	if l := nsProps.Get("location", ""); l != "" {
		return joinLocation(l, name)
	}
	wh := c.props.Get("warehouse", "")
	if wh == "" {
		return "", errors.New("resolve table location: no warehouse property and no location given")
	}
	ns := icecat.NamespaceFromIdent(ident)
	return joinLocation(wh, strings.Join(ns, ".")+".db", name)
}

// joinLocation joins path elements onto a URI or a plain local path.
func joinLocation(base string, elems ...string) (string, error) {
	if strings.Contains(base, "://") {
		return url.JoinPath(base, elems...)
	}
	return path.Join(append([]string{base}, elems...)...), nil
}

// CommitTable validates reqs against the current metadata, applies updates,
// writes the new metadata file and swaps the pointer if it has not moved. A
// moved pointer or a failed requirement returns table.ErrCommitFailed.
// When the table does not exist the commit creates it (reqs must allow that).
func (c *Catalog) CommitTable(ctx context.Context, ident icetable.Identifier,
	reqs []icetable.Requirement, updates []icetable.Update,
) (icetable.Metadata, string, error) {
	if err := icecat.ValidateTableIdentifier(ident); err != nil {
		return nil, "", err
	}
	current, err := c.LoadTable(ctx, ident)
	if err != nil && !errors.Is(err, icecat.ErrNoSuchTable) {
		return nil, "", err
	}
	base, version, err := commitBase(ident, current)
	if err != nil {
		return nil, "", err
	}
	var curMeta icetable.Metadata
	var curLoc string
	if current != nil {
		curMeta, curLoc = current.Metadata(), current.MetadataLocation()
	}
	for _, r := range reqs {
		if err := r.Validate(curMeta); err != nil {
			return nil, "", fmt.Errorf("%w: %s: requirement failed: %w", icetable.ErrCommitFailed, identString(ident), err)
		}
	}
	updated, err := icetable.UpdateTableMetadata(base, updates, curLoc)
	if err != nil {
		return nil, "", fmt.Errorf("commit table %s: apply updates: %w: %w", identString(ident), ErrInvalidCommit, err)
	}
	if current != nil && len(updates) == 0 {
		return curMeta, curLoc, nil
	}
	if err := c.checkTable(ident, updated); err != nil {
		return nil, "", fmt.Errorf("commit table %s: %w", identString(ident), err)
	}
	newLoc, err := newMetadataLocation(updated, version)
	if err != nil {
		return nil, "", err
	}
	if err := c.checkRoot(ident, newLoc); err != nil {
		return nil, "", fmt.Errorf("commit table %s: %w", identString(ident), err)
	}
	raw, err := c.writeMetadata(ctx, updated, newLoc)
	if err != nil {
		return nil, "", err
	}
	if err := c.swap(ctx, ident, current != nil, curLoc, newLoc); err != nil {
		return nil, "", err
	}
	// Keep (and hand back) the built metadata, or every reparseEvery
	// commits the metadata parsed from the bytes just written, which cuts
	// the chain of versions the built ones keep reachable.
	key := string(tableKey(ident))
	built := c.builtSince(key, curLoc) + 1
	if built >= reparseEvery {
		if parsed, perr := icetable.ParseMetadataBytes(raw); perr == nil {
			updated, built = parsed, 0
		}
	}
	c.remember(key, newLoc, updated, built)
	return updated, newLoc, nil
}

// commitBase is what a commit applies its updates to, and the version of
// the metadata file it writes: the current table's, or an empty one for a
// table the commit creates.
func commitBase(ident icetable.Identifier, current *icetable.Table) (icetable.Metadata, int, error) {
	if current == nil {
		base, err := icetable.NewMetadata(iceberg.NewSchema(0), nil, icetable.UnsortedSortOrder, "", nil)
		if err != nil {
			return nil, 0, fmt.Errorf("commit table %s: %w", identString(ident), err)
		}
		return base, 0, nil
	}
	v := parseMetadataVersion(current.MetadataLocation())
	if v < 0 {
		return nil, 0, fmt.Errorf("commit table %s: unparseable metadata location %s", identString(ident), current.MetadataLocation())
	}
	return current.Metadata(), v + 1, nil
}

// swap points ident at newLoc in one bbolt transaction if it still points
// at curLoc (exists false: if it still does not exist, in a namespace that
// does). The new metadata file is deleted when the answer is a definite
// "not swapped"; a bbolt I/O error leaves the outcome unknown, so it stays.
func (c *Catalog) swap(ctx context.Context, ident icetable.Identifier, exists bool, curLoc, newLoc string) error {
	if err := c.beforeSwap(); err != nil {
		c.removeQuietly(ctx, newLoc)
		return fmt.Errorf("commit table %s: %w", identString(ident), err)
	}
	if err := fault.Err(FailSwap); err != nil {
		c.removeQuietly(ctx, newLoc)
		return fmt.Errorf("commit table %s: swap pointer: %w", identString(ident), err)
	}
	ns := icecat.NamespaceFromIdent(ident)
	err := c.update(ctx, func(tx *bolt.Tx) error {
		e, ok, err := getTable(tx, ident)
		if err != nil {
			return err
		}
		switch {
		case !exists && ok:
			return fmt.Errorf("%w: %s created concurrently", icetable.ErrCommitFailed, identString(ident))
		case !exists:
			if _, nsOK, err := getNamespace(tx, ns); err != nil {
				return err
			} else if !nsOK {
				return fmt.Errorf("%w: %s", icecat.ErrNoSuchNamespace, identString(ns))
			}
		case !ok:
			return fmt.Errorf("%w: %s", icecat.ErrNoSuchTable, identString(ident))
		case e.MetadataLocation != curLoc:
			return fmt.Errorf("%w: %s: metadata location moved underneath us", icetable.ErrCommitFailed, identString(ident))
		}
		return putTable(tx, ident, tableEntry{MetadataLocation: newLoc, PreviousMetadataLocation: curLoc})
	})
	if err != nil && (errors.Is(err, icetable.ErrCommitFailed) || errors.Is(err, icecat.ErrNoSuchTable) ||
		errors.Is(err, icecat.ErrNoSuchNamespace)) {
		c.removeQuietly(ctx, newLoc)
	}
	return err
}

// DropTable removes the table entry; files are left in place.
func (c *Catalog) DropTable(ctx context.Context, ident icetable.Identifier) error {
	if err := icecat.ValidateTableIdentifier(ident); err != nil {
		return err
	}
	err := c.update(ctx, func(tx *bolt.Tx) error {
		if _, ok, err := getTable(tx, ident); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: %s", icecat.ErrNoSuchTable, identString(ident))
		}
		return tx.Bucket(bucketTables).Delete(tableKey(ident))
	})
	if err == nil {
		c.mu.Lock()
		delete(c.cache, string(tableKey(ident)))
		c.mu.Unlock()
	}
	return err
}

// RenameTable moves the entry from one identifier to another (the files stay
// where they are).
func (c *Catalog) RenameTable(ctx context.Context, from, to icetable.Identifier) (*icetable.Table, error) {
	if err := icecat.ValidateTableIdentifier(from); err != nil {
		return nil, err
	}
	if err := icecat.ValidateTableIdentifier(to); err != nil {
		return nil, err
	}
	err := c.update(ctx, func(tx *bolt.Tx) error {
		e, ok, err := getTable(tx, from)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", icecat.ErrNoSuchTable, identString(from))
		}
		if _, nsOK, err := getNamespace(tx, icecat.NamespaceFromIdent(to)); err != nil {
			return err
		} else if !nsOK {
			return fmt.Errorf("%w: %s", icecat.ErrNoSuchNamespace, identString(icecat.NamespaceFromIdent(to)))
		}
		if _, exists, err := getTable(tx, to); err != nil {
			return err
		} else if exists {
			return fmt.Errorf("%w: %s", icecat.ErrTableAlreadyExists, identString(to))
		}
		if err := c.checkRoot(to, e.MetadataLocation); err != nil {
			return fmt.Errorf("rename table %s to %s: %w", identString(from), identString(to), err)
		}
		if err := tx.Bucket(bucketTables).Delete(tableKey(from)); err != nil {
			return err
		}
		return putTable(tx, to, e)
	})
	if err != nil {
		return nil, err
	}
	return c.LoadTable(ctx, to)
}

// checkTable asks Options.Guard about the metadata a create or commit of
// ident would write.
func (c *Catalog) checkTable(ident icetable.Identifier, meta icetable.Metadata) error {
	if c.locGuard == nil {
		return nil
	}
	return c.locGuard.CheckTable(ident, meta)
}

// Metadata file names: <version>-<uuid>[.codec].metadata.json.
var metadataFileRe = regexp.MustCompile(`^(\d+)-[0-9a-fA-F-]{36}(?:\.\w+)?\.metadata\.json$`)

func parseMetadataVersion(loc string) int {
	m := metadataFileRe.FindStringSubmatch(path.Base(loc))
	if m == nil {
		return -1
	}
	v, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return v
}

func newMetadataLocation(meta icetable.Metadata, version int) (string, error) {
	provider, err := icetable.LoadLocationProvider(meta.Location(), meta.Properties())
	if err != nil {
		return "", fmt.Errorf("load location provider: %w", err)
	}
	loc, err := provider.NewTableMetadataFileLocation(version)
	if err != nil {
		return "", fmt.Errorf("new metadata location: %w", err)
	}
	return loc, nil
}
