package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"lakehouse/internal/boltfile"
)

// Bucket names inside catalog.db.
var (
	bucketNamespaces = []byte("namespaces") // namespace key -> JSON properties
	bucketTables     = []byte("tables")     // table key -> JSON tableEntry
)

// sharedDB is one bbolt handle shared by every Catalog opened on the same path
// in this process (bbolt's flock would otherwise make the second open wait).
type sharedDB struct {
	db   *bolt.DB
	refs int
}

var (
	openMu sync.Mutex
	opened = map[string]*sharedDB{}
)

// acquireDB opens (or reuses) the bbolt file at path and returns it with a
// release function that closes it when the last user is done.
func acquireDB(path string, lockTimeout time.Duration, readOnly bool) (*bolt.DB, func() error, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("resolve catalog path: %w", err)
	}
	key := abs
	if readOnly {
		key += "\x00ro"
	}
	openMu.Lock()
	defer openMu.Unlock()
	if s, ok := opened[key]; ok {
		s.refs++
		return s.db, releaseFunc(key, s), nil
	}
	db, err := boltfile.Open(abs, 0o644, &bolt.Options{Timeout: lockTimeout, ReadOnly: readOnly})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, nil, fmt.Errorf("open catalog %s: %w (waited %s)", abs, err, lockTimeout)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("open catalog %s: %w", abs, err)
		}
		return nil, nil, damagedCatalog(abs, err)
	}
	err = boltfile.Guard(func() error {
		// A healthy catalog is not written by opening it (a commit would
		// bump its txid): only a new one gets its buckets.
		complete := false
		if err := db.View(func(tx *bolt.Tx) error {
			complete = tx.Bucket(bucketNamespaces) != nil && tx.Bucket(bucketTables) != nil
			return nil
		}); err != nil || complete {
			return err
		}
		if readOnly {
			return fmt.Errorf("%w: no %s or %s bucket: not a catalog", boltfile.ErrDamaged, bucketNamespaces, bucketTables)
		}
		return db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketNamespaces, bucketTables} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		_ = boltfile.Close(db)
		if errors.Is(err, boltfile.ErrDamaged) {
			return nil, nil, damagedCatalog(abs, err)
		}
		return nil, nil, fmt.Errorf("create catalog buckets: %w", err)
	}
	s := &sharedDB{db: db, refs: 1}
	opened[key] = s
	return db, releaseFunc(key, s), nil
}

// damagedCatalog is the error for a catalog file that cannot be opened,
// with the way out.
func damagedCatalog(path string, err error) error {
	return fmt.Errorf("open catalog %s: %w; nothing was changed: %s", path, err, wayOut)
}

const wayOut = "stop the appliance, move the file away and restore it from a backup (it holds only the pointer to each table's current metadata.json under warehouse/)"

// CheckFile reads every page of the catalog file at path (it must not be
// open for writing, in this process or another: it waits for the file
// lock at most DefaultLockTimeout), the full check no open does: see
// boltfile.Check. A damaged file is an error naming it (wrapping
// boltfile.ErrDamaged) with the way out.
func CheckFile(path string) (boltfile.Summary, error) {
	s, err := boltfile.Check(path, DefaultLockTimeout)
	switch {
	case errors.Is(err, boltfile.ErrDamaged):
		return s, fmt.Errorf("check catalog %s: %w: %s", path, err, wayOut)
	case errors.Is(err, bolterrors.ErrTimeout):
		return s, fmt.Errorf("check catalog %s: %w", path, err)
	case err != nil:
		return s, fmt.Errorf("check catalog %s: %w", path, err)
	}
	return s, nil
}

func releaseFunc(abs string, s *sharedDB) func() error {
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			openMu.Lock()
			defer openMu.Unlock()
			s.refs--
			if s.refs == 0 {
				delete(opened, abs)
				err = boltfile.Close(s.db)
			}
		})
		return err
	}
}
