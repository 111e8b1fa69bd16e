package broker

import (
	bolt "go.etcd.io/bbolt"
)

// DefaultReleaseMappedBytes is how many bytes of records are read,
// appended or walked by retention between two releases of broker.db's resident map pages: the
// most the map adds to RSS between releases (at 35 events/s, about every
// three minutes; at 64 MiB the soak's RSS climbed 50 MiB in ten minutes).
const DefaultReleaseMappedBytes = 16 << 20

// bbolt reads through a read-only, shared memory map of broker.db. Every page
// the process touches stays mapped into it: pages a consumer reads (bronze
// reads a backlog once) and pages a commit reads on its way down the tree
// (copy-on-write moves the rightmost leaves to new pages on every commit).
// So the process's RSS grew with the log, by a third of what was appended
// and all of what was read (retention reads every record it trims, to
// check its age), although those pages are only file cache the kernel
// could drop. The broker therefore releases them every ReleaseMappedBytes
// of records read, appended or trimmed. The page cache keeps the
// data; a later access faults the page back in from it (a minor fault, no
// disk read while the cache holds it).

// noteMapped counts n bytes of records read or appended and releases the
// map once enough accumulated.
func (d *DB) noteMapped(n int64) {
	every := d.opts.ReleaseMappedBytes
	if every < 0 || d.mappedSinceRelease.Add(n) < every {
		return
	}
	d.mappedSinceRelease.Store(0)
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
	return d.view(func(tx *bolt.Tx) error {
		return dropMapped(d.db.Info().Data, tx.Size())
	})
}
