package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
	bolt "go.etcd.io/bbolt"
)

func getNamespace(tx *bolt.Tx, ns icetable.Identifier) (iceberg.Properties, bool, error) {
	raw := tx.Bucket(bucketNamespaces).Get(nsKey(ns))
	if raw == nil {
		return nil, false, nil
	}
	props := iceberg.Properties{}
	if err := json.Unmarshal(raw, &props); err != nil {
		return nil, true, fmt.Errorf("decode namespace %s: %w", identString(ns), err)
	}
	return props, true, nil
}

func putNamespace(tx *bolt.Tx, ns icetable.Identifier, props iceberg.Properties) error {
	if props == nil {
		props = iceberg.Properties{}
	}
	raw, err := json.Marshal(props)
	if err != nil {
		return fmt.Errorf("encode namespace %s: %w", identString(ns), err)
	}
	return tx.Bucket(bucketNamespaces).Put(nsKey(ns), raw)
}

// CreateNamespace creates ns with props. It returns
// catalog.ErrNamespaceAlreadyExists if ns exists.
func (c *Catalog) CreateNamespace(ctx context.Context, ns icetable.Identifier, props iceberg.Properties) error {
	if err := icecat.ValidateNamespaceIdentifier(ns); err != nil {
		return err
	}
	if c.locGuard != nil {
		if err := c.locGuard.CheckNamespace(ns, props); err != nil {
			return fmt.Errorf("create namespace %s: %w", identString(ns), err)
		}
	}
	return c.update(ctx, func(tx *bolt.Tx) error {
		if _, ok, err := getNamespace(tx, ns); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("%w: %s", icecat.ErrNamespaceAlreadyExists, identString(ns))
		}
		return putNamespace(tx, ns, maps.Clone(props))
	})
}

// DropNamespace removes an empty namespace. It returns
// catalog.ErrNoSuchNamespace or catalog.ErrNamespaceNotEmpty.
func (c *Catalog) DropNamespace(ctx context.Context, ns icetable.Identifier) error {
	if err := icecat.ValidateNamespaceIdentifier(ns); err != nil {
		return err
	}
	return c.update(ctx, func(tx *bolt.Tx) error {
		if _, ok, err := getNamespace(tx, ns); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: %s", icecat.ErrNoSuchNamespace, identString(ns))
		}
		prefix := tablePrefix(ns)
		if k, _ := tx.Bucket(bucketTables).Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
			return fmt.Errorf("%w: %s", icecat.ErrNamespaceNotEmpty, identString(ns))
		}
		return tx.Bucket(bucketNamespaces).Delete(nsKey(ns))
	})
}

// CheckNamespaceExists reports whether ns exists.
func (c *Catalog) CheckNamespaceExists(ctx context.Context, ns icetable.Identifier) (bool, error) {
	var ok bool
	err := c.view(ctx, func(tx *bolt.Tx) error {
		var err error
		_, ok, err = getNamespace(tx, ns)
		return err
	})
	return ok, err
}

// LoadNamespaceProperties returns the properties of ns (never nil).
func (c *Catalog) LoadNamespaceProperties(ctx context.Context, ns icetable.Identifier) (iceberg.Properties, error) {
	var props iceberg.Properties
	err := c.view(ctx, func(tx *bolt.Tx) error {
		p, ok, err := getNamespace(tx, ns)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", icecat.ErrNoSuchNamespace, identString(ns))
		}
		props = p
		return nil
	})
	return props, err
}

// ListNamespaces lists the namespaces below parent (all when parent is empty).
func (c *Catalog) ListNamespaces(ctx context.Context, parent icetable.Identifier) ([]icetable.Identifier, error) {
	var out []icetable.Identifier
	err := c.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketNamespaces).ForEach(func(k, _ []byte) error {
			ns := nsFromKey(k)
			if len(ns) > len(parent) && slices.Equal(ns[:len(parent)], parent) {
				out = append(out, ns)
			}
			return nil
		})
	})
	return out, err
}

// UpdateNamespaceProperties removes and sets properties of ns in one
// transaction.
func (c *Catalog) UpdateNamespaceProperties(ctx context.Context, ns icetable.Identifier,
	removals []string, updates iceberg.Properties,
) (icecat.PropertiesUpdateSummary, error) {
	var sum icecat.PropertiesUpdateSummary
	for _, k := range removals {
		if _, ok := updates[k]; ok {
			return sum, fmt.Errorf("%w: property %q is both removed and updated", iceberg.ErrInvalidArgument, k)
		}
	}
	err := c.update(ctx, func(tx *bolt.Tx) error {
		props, ok, err := getNamespace(tx, ns)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", icecat.ErrNoSuchNamespace, identString(ns))
		}
		sum = icecat.PropertiesUpdateSummary{Removed: []string{}, Updated: []string{}, Missing: []string{}}
		for _, k := range removals {
			if _, ok := props[k]; ok {
				delete(props, k)
				sum.Removed = append(sum.Removed, k)
			} else {
				sum.Missing = append(sum.Missing, k)
			}
		}
		for k, v := range updates {
			props[k] = v
			sum.Updated = append(sum.Updated, k)
		}
		slices.Sort(sum.Updated)
		if c.locGuard != nil {
			if err := c.locGuard.CheckNamespace(ns, props); err != nil {
				return fmt.Errorf("update namespace %s: %w", identString(ns), err)
			}
		}
		return putNamespace(tx, ns, props)
	})
	return sum, err
}
