package broker

import (
	bolt "go.etcd.io/bbolt"
)

// DefaultReleaseMappedBytes is how many bytes of records are read,
// appended or walked by retention between two releases of broker.db's
// resident map pages, and how much the process's resident file-backed
// pages may grow between them: the most the map adds to RSS between
// releases, small beside the appliance's heap (at 35 events/s, a release
// about every three minutes).
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
//
// The bytes of records understate what a transaction maps once the page
// cache holds broker.db in large folios (up to 2 MiB each, as the kernel
// builds them for a sequential read of the file: verify, a copy, a
// backup): Linux then maps the whole folio into the process when one of
// its pages is touched, whatever the madvise advice. A commit of a few
// records touches about ten pages spread over the file (copy-on-write
// reuses free pages wherever they are), so each commit could map tens of
// MiB while counting a few KiB: a slow stream left most of a large file
// resident within minutes. So the broker also compares what the process
// has resident of mapped files with what it had after the last release,
// and releases once that grew by as much.

// noteMapped counts n bytes of records read or appended and releases the
// map once enough accumulated, or once the process's resident file-backed
// pages grew by as much since the last release.
func (d *DB) noteMapped(n int64) {
	every := d.opts.ReleaseMappedBytes
	if every < 0 {
		return
	}
	if d.mappedSinceRelease.Add(n) < every && !d.residentGrew(every) {
		return
	}
	d.mappedSinceRelease.Store(0)
	// Best effort: a failed release costs memory, never data.
	_ = d.ReleaseMapped()
}

// residentGrew reports whether the process's resident file-backed pages
// grew by at least every since the last release. Pages the kernel
// reclaimed meanwhile lower the baseline, so the growth counted is what
// the process added since its lowest point.
func (d *DB) residentGrew(every int64) bool {
	now := fileResident()
	if now < 0 {
		return false // no figure (not Linux, no /proc): records only
	}
	base := d.residentAtRelease.Load()
	if now < base {
		d.residentAtRelease.CompareAndSwap(base, now)
		return false
	}
	return now-base >= every
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
	err := d.view(func(tx *bolt.Tx) error {
		return dropMapped(d.db.Info().Data, tx.Size())
	})
	d.residentAtRelease.Store(fileResident())
	return err
}
