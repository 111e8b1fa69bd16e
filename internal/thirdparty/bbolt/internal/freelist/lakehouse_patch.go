package freelist

import "go.etcd.io/bbolt/internal/common"

// pruneAllocs drops the allocs entries that no release can use any more
// (lakehouse patch; see PATCH.md at the root of this copy).
//
// Upstream records, for every page Allocate takes from the free list, the
// transaction that took it, and deletes the entry only when the page is
// freed again. A page that is never rewritten (a full leaf of an
// append-only log) keeps its entry for as long as it lives, so the map
// grows with the file: about 1.5 MB of heap per 577 MiB of broker records.
//
// The entry's only readers are Free, which copies it into the pending
// list's alloctx so that releaseRange can release a page allocated and
// freed between two open read transactions, and Rollback, which restores
// or deletes entries of the transaction it rolls back. releaseRange only
// ever considers alloctx at or above the oldest open read transaction
// (its begin is that transaction's id or later); with none open, every
// later reader starts at the last committed transaction or later, which is
// at least the newest entry's. So an entry below floor (the oldest reader,
// or the newest entry when there is no reader) can never be used again, and
// a page whose entry is gone is treated as upstream treats a page taken
// from the end of the file (alloctx 0: released with its pending tx).
//
// Called at the start of every read-write transaction, after the pending
// pages are released; it walks the map only when the floor moved, and the
// map then holds the entries of the transactions since the oldest reader.
func (t *shared) pruneAllocs() {
	if len(t.allocs) == 0 {
		return
	}
	var floor common.Txid
	if len(t.readonlyTXIDs) > 0 {
		floor = t.readonlyTXIDs[0] // sorted by ReleasePendingPages
	} else {
		for _, tid := range t.allocs {
			floor = max(floor, tid)
		}
	}
	if floor <= t.prunedBelow {
		return
	}
	for pgid, tid := range t.allocs {
		if tid < floor {
			delete(t.allocs, pgid)
		}
	}
	t.prunedBelow = floor
}
