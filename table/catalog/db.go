package catalog

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
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
func acquireDB(path string, lockTimeout time.Duration) (*bolt.DB, func() error, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("resolve catalog path: %w", err)
	}
	openMu.Lock()
	defer openMu.Unlock()
	if s, ok := opened[abs]; ok {
		s.refs++
		return s.db, releaseFunc(abs, s), nil
	}
	db, err := bolt.Open(abs, 0o644, &bolt.Options{Timeout: lockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, nil, fmt.Errorf("open catalog %s: locked by another process for %s (is the appliance running on this data directory?): %w", abs, lockTimeout, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open catalog %s: %w", abs, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketNamespaces, bucketTables} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("create catalog buckets: %w", err)
	}
	s := &sharedDB{db: db, refs: 1}
	opened[abs] = s
	return db, releaseFunc(abs, s), nil
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
				err = s.db.Close()
			}
		})
		return err
	}
}
