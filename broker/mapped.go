package broker

import (
	bolt "go.etcd.io/bbolt"
)

// DefaultReleaseMappedBytes is how many bytes of records Read returns between
// two releases of broker.db's resident map pages.
const DefaultReleaseMappedBytes = 64 << 20

// bbolt reads through a read-only, shared memory map of broker.db. Every page
// a reader touches stays mapped into the process, so a consumer that reads a
// backlog once (bronze does) leaves the whole file resident: the process's
// RSS grows with the log, although those pages are only file cache the
// kernel could drop. The broker therefore releases them every
// ReleaseMappedBytes of reads. The page cache keeps the data; a later access
// faults the page back in from it (a minor fault, no disk read while the
// cache holds it).

// noteRead counts n bytes returned by Read and releases the map once enough
// accumulated.
func (d *DB) noteRead(n int64) {
	every := d.opts.ReleaseMappedBytes
	if every < 0 || d.readSinceRelease.Add(n) < every {
		return
	}
	d.readSinceRelease.Store(0)
	// Best effort: a failed release costs memory, never data.
	_ = d.ReleaseMapped()
}

// ReleaseMapped drops this process's resident pages of broker.db's memory
// map. The data stays in the kernel's page cache and on disk; only the
// mapping's page-table entries go. Returns the number of bytes of the map
// it covered.
//
// It runs inside a read transaction: bbolt remaps (after the file grew)
// only with every read transaction closed, so the address range is the live
// map for the whole call and never memory that was handed to anything else.
func (d *DB) ReleaseMapped() error {
	return d.db.View(func(tx *bolt.Tx) error {
		return dropMapped(d.db.Info().Data, tx.Size())
	})
}
