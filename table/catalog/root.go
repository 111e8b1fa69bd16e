package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// ErrSeveralRoots means the catalog's tables were created under more than
// one warehouse root, so no single root can be resolved for them.
var ErrSeveralRoots = errors.New("tables under several warehouse roots")

// recordedRoot returns the warehouse root the catalog's tables were created
// under, read from their pointers: a table created at the default location
// has its current metadata file at
// <root>/<namespace>.db/<name>/metadata/<file>. Tables elsewhere (an
// explicit location, a namespace "location") say nothing about the root.
// It returns "" when no table is at a default location.
func recordedRoot(tx *bolt.Tx) (string, error) {
	var root, from string
	cur := tx.Bucket(bucketTables).Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			continue
		}
		ns := strings.Join(nsFromKey(k[:i]), ".")
		name := string(k[i+1:])
		var e tableEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return "", fmt.Errorf("decode table entry %s.%s: %w", ns, name, err)
		}
		r, ok := rootOf(e.MetadataLocation, ns, name)
		if !ok {
			continue
		}
		if root != "" && r != root {
			return "", fmt.Errorf("%w: %s (%s) and %s (%s)", ErrSeveralRoots, root, from, r, ns+"."+name)
		}
		root, from = r, ns+"."+name
	}
	return root, nil
}

// rootOf strips /<ns>.db/<name>/metadata/<file> from a metadata location.
func rootOf(loc, ns, name string) (string, bool) {
	i := strings.LastIndexByte(loc, '/')
	if i < 0 || i == len(loc)-1 {
		return "", false
	}
	dir := loc[:i]
	suffix := "/" + ns + ".db/" + name + "/metadata"
	if !strings.HasSuffix(dir, suffix) || len(dir) == len(suffix) {
		return "", false
	}
	return dir[:len(dir)-len(suffix)], true
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
		root, err = recordedRoot(tx)
		return err
	}); err != nil {
		return err
	}
	if root != "" {
		c.props["warehouse"] = root
	}
	return nil
}
