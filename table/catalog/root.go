package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	icetable "github.com/apache/iceberg-go/table"
	bolt "go.etcd.io/bbolt"
)

// ErrSeveralRoots means the catalog's owned tables (Options.Owned) were
// created under more than one warehouse root, so no single root can be
// resolved for them.
var ErrSeveralRoots = errors.New("tables under several warehouse roots")

// Pointer is one table entry: its identifier and where its current
// metadata file is.
type Pointer struct {
	Ident            icetable.Identifier
	MetadataLocation string
}

// Stray is a table entry the catalog does not accept: a table of a
// namespace Options.Owned does not claim, at a default location under
// another warehouse root than the catalog's (it would make the root
// ambiguous). The catalog opens and serves every other table; the entry
// can be dropped.
type Stray struct {
	Pointer
	Root string // the root its location names
}

// pointers reads every table entry.
func pointers(tx *bolt.Tx) ([]Pointer, error) {
	var out []Pointer
	cur := tx.Bucket(bucketTables).Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			continue
		}
		ident := append(nsFromKey(k[:i]), string(k[i+1:]))
		var e tableEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, fmt.Errorf("decode table entry %s: %w", identString(ident), err)
		}
		out = append(out, Pointer{Ident: ident, MetadataLocation: e.MetadataLocation})
	}
	return out, nil
}

// Pointers returns every table entry, in key order.
func (c *Catalog) Pointers(ctx context.Context) ([]Pointer, error) {
	var out []Pointer
	err := c.view(ctx, func(tx *bolt.Tx) error {
		var err error
		out, err = pointers(tx)
		return err
	})
	return out, err
}

// owned reports whether ident's namespace is one Options.Owned claims
// (every namespace when it is nil).
func (c *Catalog) owned(ident icetable.Identifier) bool {
	return c.ownedNS == nil || len(ident) > 1 && c.ownedNS(ident[:len(ident)-1])
}

// recordedRoot returns the warehouse root the catalog's tables were created
// under, read from their pointers: a table created at the default location
// has its current metadata file at
// <root>/<namespace>.db/<name>/metadata/<file>. Tables elsewhere (an
// explicit location, a namespace "location") say nothing about the root.
// The owned tables decide; two roots among them are ErrSeveralRoots. With
// no owned table at a default location, the root most of the others name
// does (on a tie, the warehouse property's, else the first in order). It
// returns "" when no table is at a default location.
func (c *Catalog) recordedRoot(tx *bolt.Tx) (string, error) {
	ps, err := pointers(tx)
	if err != nil {
		return "", err
	}
	var root, from string
	votes := map[string]int{}
	for _, p := range ps {
		r, ok := rootOf(p.MetadataLocation, p.Ident)
		if !ok {
			continue
		}
		if !c.owned(p.Ident) {
			votes[r]++
			continue
		}
		if root != "" && !sameRoot(r, root) {
			return "", fmt.Errorf("%w: %s (%s) and %s (%s)", ErrSeveralRoots, root, from, r, identString(p.Ident))
		}
		root, from = r, identString(p.Ident)
	}
	if root != "" || len(votes) == 0 {
		return root, nil
	}
	roots := make([]string, 0, len(votes))
	for r := range votes {
		roots = append(roots, r)
	}
	wh := c.props.Get("warehouse", "")
	sort.Slice(roots, func(i, j int) bool {
		a, b := roots[i], roots[j]
		if votes[a] != votes[b] {
			return votes[a] > votes[b]
		}
		if sameRoot(a, wh) != sameRoot(b, wh) {
			return sameRoot(a, wh)
		}
		return a < b
	})
	return roots[0], nil
}

// rootOf strips /<ns>.db/<name>/metadata/<file> from a metadata location
// of table ident.
func rootOf(loc string, ident icetable.Identifier) (string, bool) {
	i := strings.LastIndexByte(loc, '/')
	if i < 0 || i == len(loc)-1 || len(ident) < 2 {
		return "", false
	}
	dir := loc[:i]
	ns := strings.Join(ident[:len(ident)-1], ".")
	suffix := "/" + ns + ".db/" + ident[len(ident)-1] + "/metadata"
	if !strings.HasSuffix(dir, suffix) || len(dir) == len(suffix) {
		return "", false
	}
	return dir[:len(dir)-len(suffix)], true
}

// sameRoot compares two warehouse roots as locations: a plain path and the
// file: URI of the same directory are one root.
func sameRoot(a, b string) bool { return normRoot(a) == normRoot(b) }

func normRoot(r string) string {
	if strings.HasPrefix(r, "file:") {
		if u, err := url.Parse(r); err == nil && (u.Host == "" || u.Host == "localhost") {
			r = u.Path
		}
	}
	if strings.HasPrefix(r, "/") {
		return path.Clean(r)
	}
	return strings.TrimSuffix(r, "/")
}

// Root returns the warehouse root this catalog creates tables under: the
// root its existing tables were created under (see Options.Props), which is
// where their metadata says their files are, even after the data directory
// was copied or moved. A Catalog with no table at a default location uses
// the "warehouse" property.
func (c *Catalog) Root() string { return c.props.Get("warehouse", "") }

// resolveRoot sets the "warehouse" property to the recorded root, if any.
func (c *Catalog) resolveRoot(ctx context.Context) error {
	var root string
	if err := c.view(ctx, func(tx *bolt.Tx) error {
		var err error
		root, err = c.recordedRoot(tx)
		return err
	}); err != nil {
		return err
	}
	if root != "" {
		c.props["warehouse"] = root
	}
	return nil
}

// checkRoot refuses a metadata location of ident that would name another
// warehouse root than the catalog's: a location ending in
// <namespace>.db/<name> under any other directory.
func (c *Catalog) checkRoot(ident icetable.Identifier, metaLoc string) error {
	r, ok := rootOf(metaLoc, ident)
	if !ok || c.Root() == "" || sameRoot(r, c.Root()) {
		return nil
	}
	return fmt.Errorf("%w: %s: a table at %s/%s.db/%s names %s as the warehouse root, and this catalog's root is %s (use that location, or omit it for the default)",
		ErrLocation, identString(ident), r, strings.Join(ident[:len(ident)-1], "."), ident[len(ident)-1], r, c.Root())
}

// Strays returns the table entries the catalog does not accept (see
// Stray), in key order.
func (c *Catalog) Strays(ctx context.Context) ([]Stray, error) {
	ps, err := c.Pointers(ctx)
	if err != nil {
		return nil, err
	}
	var out []Stray
	for _, p := range ps {
		if r, ok := rootOf(p.MetadataLocation, p.Ident); ok && !c.owned(p.Ident) && c.Root() != "" && !sameRoot(r, c.Root()) {
			out = append(out, Stray{Pointer: p, Root: r})
		}
	}
	return out, nil
}
