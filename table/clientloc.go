package table

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"

	"lakehouse/table/catalog"
)

// The one location rule. Tables of namespaces the lake does not own (its
// own, Config.OwnNamespaces and the namespaces of Tables, are written by the
// appliance alone) are a REST client's: the lake's catalog lets a client
// set where such a table's files go (a create's or staged create's
// "location", a namespace's "location" property, a commit's set-location,
// the write.data.path and write.metadata.path properties). Each such
// location, and the metadata and data file paths iceberg-go derives from it
// (its location provider parses it as a URI, percent-decodes and cleans
// it), is resolved exactly as the lake resolves a path when it writes (on
// local disk rootedFS: a file: URI or plain path, cleaned, mapped from the
// recorded root to the warehouse; on S3 the object key iceberg-go's S3 file
// IO takes, raw), and must be inside the warehouse, neither the warehouse
// itself nor inside or above an owned namespace's directory
// (<warehouse>/<namespace>.db). The catalog itself keeps every table under
// its one warehouse root (catalog.ErrLocation). A refusal wraps
// catalog.ErrLocation (and catalog.ErrReserved for an owned directory),
// names the field and the rule, and comes before anything is written.

// Bounds on a client's table and namespace properties: they are kept in
// catalog.db (a namespace's) or in every metadata file of the table, which
// every load reads whole. Past one, catalog.ErrLimit (400 over REST).
const (
	MaxPropertyKey   = 256      // bytes of a key
	MaxPropertyValue = 16 << 10 // bytes of a value
	MaxProperties    = 64 << 10 // bytes of all keys and values
)

// checkProps bounds props, which field holds.
func checkProps(field string, props iceberg.Properties) error {
	total := 0
	for k, v := range props {
		if len(k) > MaxPropertyKey {
			return fmt.Errorf("%w: %s: a key of %d bytes (%.40q...): at most %d", catalog.ErrLimit, field, len(k), k, MaxPropertyKey)
		}
		if len(v) > MaxPropertyValue {
			return fmt.Errorf("%w: %s: the value of %q is %d bytes: at most %d", catalog.ErrLimit, field, k, len(v), MaxPropertyValue)
		}
		total += len(k) + len(v)
	}
	if total > MaxProperties {
		return fmt.Errorf("%w: %s: %d bytes of keys and values: at most %d", catalog.ErrLimit, field, total, MaxProperties)
	}
	return nil
}

// locationGuard is the rule as the lake's catalog asks it (catalog.Guard).
type locationGuard struct {
	own    map[string]bool // owned top-level namespaces
	wh     string          // the warehouse: a local path or s3://bucket/prefix
	rooted *rootedFS       // the local resolver; nil on S3
}

var _ catalog.Guard = (*locationGuard)(nil)

func (g *locationGuard) owned(ns icetable.Identifier) bool { return len(ns) > 0 && g.own[ns[0]] }

// resolve returns where loc is relative to the warehouse ("" for the
// warehouse itself, else "/a/b"), as the lake resolves it when it writes.
func (g *locationGuard) resolve(loc string) (string, error) {
	if g.rooted != nil {
		p, err := g.rooted.resolve(loc)
		if err != nil {
			return "", err
		}
		return filepath.ToSlash(p[len(g.rooted.actual):]), nil
	}
	scheme, rest, ok := strings.Cut(loc, "://")
	if !ok || (scheme != "s3" && scheme != "s3a" && scheme != "s3n") {
		return "", fmt.Errorf("%w %s: not an s3:// location", ErrOutsideWarehouse, g.wh)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	whBucket, whKey, _ := strings.Cut(strings.TrimPrefix(g.wh, "s3://"), "/")
	if bucket != whBucket {
		return "", fmt.Errorf("%w %s: bucket %q", ErrOutsideWarehouse, g.wh, bucket)
	}
	rel := "/" + key
	if whKey != "" {
		if key != whKey && !strings.HasPrefix(key, whKey+"/") {
			return "", fmt.Errorf("%w %s", ErrOutsideWarehouse, g.wh)
		}
		rel = key[len(whKey):]
	}
	if rel == "/" {
		rel = ""
	}
	if rel != "" && path.Clean(rel) != rel {
		// Object keys are taken raw, and other engines clean them: refuse
		// the keys on which they would differ.
		return "", fmt.Errorf("object key %q has empty, . or .. segments", key)
	}
	return rel, nil
}

// reserved returns the owned namespace whose directory holds rel, or
// whose directory rel holds (around true: a directory above it).
func (g *locationGuard) reserved(rel string) (ns string, around bool) {
	for n := range g.own {
		d := "/" + n + ".db"
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return n, false
		}
		if rel == "" || strings.HasPrefix(d, rel+"/") {
			return n, true
		}
	}
	return "", false
}

// check applies the rule to one location; field names where it came from.
// A plain path with percent-escapes is checked as written (how the lake
// writes it) and percent-decoded (how a reader parsing it as a URI, as
// iceberg-go's location provider does, reads it), and refused when the two
// differ.
func (g *locationGuard) check(field, loc string, dir bool) error {
	if err := g.checkOne(field, loc, dir); err != nil {
		return err
	}
	if g.rooted == nil || strings.HasPrefix(loc, "file:") || !strings.Contains(loc, "%") {
		return nil
	}
	decoded, err := url.PathUnescape(loc)
	if err != nil || decoded == loc {
		return nil
	}
	if err := g.checkOne(field+" (percent-decoded)", decoded, dir); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s %q: a plain path with percent-escapes names one directory as written and another as a URI; spell it as a file:// URI or without escapes", catalog.ErrLocation, field, loc)
}

func (g *locationGuard) checkOne(field, loc string, dir bool) error {
	rel, err := g.resolve(loc)
	if err != nil {
		return fmt.Errorf("%w: %s %q: must be inside the warehouse %s: %w", catalog.ErrLocation, field, loc, g.wh, err)
	}
	if ns, around := g.reserved(rel); ns != "" && (dir || !around) {
		where := "inside"
		if around {
			where = "a directory holding"
		}
		return fmt.Errorf("%w: %w: %s %q: resolves to %s, %s %s/%s.db, the directory of the appliance's namespace %s, whose files only the appliance writes",
			catalog.ErrLocation, catalog.ErrReserved, field, loc, g.wh+rel, where, g.wh, ns, ns)
	}
	if dir && rel == "" {
		return fmt.Errorf("%w: %s %q: is the warehouse %s itself; a table needs a directory of its own inside it", catalog.ErrLocation, field, loc, g.wh)
	}
	return nil
}

// paths are the locations of a table's files its metadata sets: its
// location, and where iceberg-go puts its metadata and data files, each
// with the field that set it.
func tablePaths(meta icetable.Metadata) ([][3]string, error) {
	loc := meta.Location()
	props := meta.Properties()
	provider, err := icetable.LoadLocationProvider(loc, props)
	if err != nil {
		return nil, fmt.Errorf("%w: location %q: not a location iceberg-go can write under: %w", catalog.ErrLocation, loc, err)
	}
	metaField, dataField := "location", "location"
	if _, ok := props[icetable.WriteMetadataPathKey]; ok {
		metaField = "property " + icetable.WriteMetadataPathKey
	}
	if _, ok := props[icetable.WriteDataPathKey]; ok {
		dataField = "property " + icetable.WriteDataPathKey
	}
	return [][3]string{
		{"location", loc, "dir"},
		{metaField + " (its metadata files)", dirOf(provider.NewMetadataLocation("00000-probe.metadata.json")), "dir"},
		{dataField + " (its data files)", dirOf(provider.NewDataLocation("probe.parquet")), ""},
	}, nil
}

// dirOf strips the last segment of a path or URI (path.Dir would clean a
// URI's "//").
func dirOf(loc string) string {
	if i := strings.LastIndexByte(loc, '/'); i > 0 {
		return loc[:i]
	}
	return loc
}

// CheckTable applies the rule, and the bounds on properties, to a client
// table's metadata before the catalog writes it.
func (g *locationGuard) CheckTable(ident icetable.Identifier, meta icetable.Metadata) error {
	if g.owned(ident[:len(ident)-1]) {
		return nil
	}
	if err := checkProps("table properties", meta.Properties()); err != nil {
		return err
	}
	ps, err := tablePaths(meta)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := g.check(p[0], p[1], p[2] == "dir"); err != nil {
			return err
		}
	}
	return nil
}

// CheckNamespace applies the rule to a client namespace's "location", and
// bounds its properties.
func (g *locationGuard) CheckNamespace(ns icetable.Identifier, props iceberg.Properties) error {
	if g.owned(ns) {
		return nil
	}
	if err := checkProps("namespace properties", props); err != nil {
		return err
	}
	if loc := props["location"]; loc != "" {
		return g.check("namespace property location", loc, true)
	}
	return nil
}

// CheckDelete allows a purge to delete path only inside the table's own
// directories (its location, metadata and data paths), by the rule.
func (g *locationGuard) CheckDelete(ident icetable.Identifier, meta icetable.Metadata, p string) error {
	if g.owned(ident[:len(ident)-1]) {
		return fmt.Errorf("%w: %w: the appliance's tables are never purged", catalog.ErrLocation, catalog.ErrReserved)
	}
	if err := g.check("file", p, false); err != nil {
		return err
	}
	rel, _ := g.resolve(p)
	ps, err := tablePaths(meta)
	if err != nil {
		return err
	}
	for _, d := range ps {
		if dr, err := g.resolve(d[1]); err == nil && dr != "" && strings.HasPrefix(rel, dr+"/") {
			return nil
		}
	}
	return fmt.Errorf("%w: file %q is not under the table's location %q or its metadata and data paths", catalog.ErrLocation, p, meta.Location())
}

// OddTable is a catalog entry the lake does not accept: a client table
// under another warehouse root than the catalog's, or whose metadata file
// the location rule refuses. The lake opens and serves every other table;
// the entry can be dropped (through REST, or offline).
type OddTable struct {
	Name             string `json:"name"`
	MetadataLocation string `json:"metadata_location"`
	Reason           string `json:"reason"`
	ident            icetable.Identifier
}

// OddTables lists the catalog entries the lake does not accept (none with
// the tables in a REST catalog, whose server decides).
func (l *Lake) OddTables(ctx context.Context) ([]OddTable, error) {
	emb, ok := l.cat.(*catalog.Catalog)
	if !ok || l.guard == nil {
		return nil, nil
	}
	strays, err := emb.Strays(ctx)
	if err != nil {
		return nil, fmt.Errorf("list odd tables: %w", err)
	}
	var out []OddTable
	stray := map[string]bool{}
	for _, s := range strays {
		name := strings.Join(s.Ident, ".")
		stray[name] = true
		out = append(out, OddTable{Name: name, MetadataLocation: s.MetadataLocation, ident: s.Ident,
			Reason: fmt.Sprintf("at a default location under %s, another warehouse root than the catalog's %s", s.Root, emb.Root())})
	}
	ps, err := emb.Pointers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list odd tables: %w", err)
	}
	for _, p := range ps {
		name := strings.Join(p.Ident, ".")
		if stray[name] || l.guard.owned(p.Ident[:len(p.Ident)-1]) {
			continue
		}
		if err := l.guard.check("metadata file", p.MetadataLocation, false); err != nil {
			out = append(out, OddTable{Name: name, MetadataLocation: p.MetadataLocation, ident: p.Ident, Reason: strings.TrimPrefix(err.Error(), catalog.ErrLocation.Error()+": ")})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DropOdd drops the entry of an odd table (files stay where they are). A
// table that is not odd is refused (ErrNotOdd).
func (l *Lake) DropOdd(ctx context.Context, name string) error {
	odd, err := l.OddTables(ctx)
	if err != nil {
		return err
	}
	for _, o := range odd {
		if o.Name == name {
			return l.cat.DropTable(ctx, o.ident)
		}
	}
	return fmt.Errorf("drop %s: %w", name, ErrNotOdd)
}

// ErrNotOdd: DropOdd was asked to drop a table the lake accepts.
var ErrNotOdd = errors.New("not an odd table: only entries OddTables lists are dropped this way")
