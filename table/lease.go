package table

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	icetable "github.com/apache/iceberg-go/table"
)

// A reader of a lake that another process writes (a `query` beside the
// running appliance) plans a table's files from one snapshot and reads
// them for as long as the query runs. Compaction replaces files and
// expiry deletes the files only expired snapshots referenced, so a reader
// could find its files gone. A lease pins, in the writing process, the
// snapshot each table is at: ExpireSnapshots keeps every leased snapshot
// and every newer one until the lease is released or ends. A reader
// leases before it plans and plans the leased snapshots (DataFilesAt), so
// nothing it reads is deleted under it; the lease's end bounds what a
// reader that died without releasing it holds back.
//
// Leases live in the writing process's memory: a reader whose writer
// restarts mid-read holds nothing (the restarted writer's expiry keeps
// the newest KeepSnapshots, so a reader loses files only if that many
// commits and an expiry happen before it finishes).

// ErrNoLease means Release was given an id no lease has (ended or never
// granted).
var ErrNoLease = errors.New("no such lease")

// Lease is a set of snapshots, one per table, expiry keeps until Until.
type Lease struct {
	ID        string           `json:"id"`
	Snapshots map[string]int64 `json:"snapshots"` // ident -> snapshot (0: the table had none)
	Until     time.Time        `json:"until"`
}

type leases struct {
	mu sync.Mutex
	by map[string]Lease
}

// Lease pins the current snapshot of each of idents for ttl (at most
// MaxLease) and returns the lease. Tables that do not exist are left out.
func (l *Lake) Lease(ctx context.Context, idents []string, ttl time.Duration) (Lease, error) {
	if ttl <= 0 {
		return Lease{}, fmt.Errorf("lease: ttl %s: want a positive duration", ttl)
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return Lease{}, fmt.Errorf("lease: %w", err)
	}
	ls := Lease{ID: hex.EncodeToString(id[:]), Snapshots: map[string]int64{}, Until: time.Now().Add(min(ttl, MaxLease))}
	for _, ident := range idents {
		if err := l.leaseTable(ctx, &ls, ident); err != nil {
			_ = l.Release(ls.ID)
			return Lease{}, err
		}
	}
	return ls, nil
}

// leaseTable adds ident's current snapshot to ls and registers ls, under
// ident's commit lock: an expiry of this Lake holds the same lock, so none
// runs between reading the snapshot and the lease holding it. The map is
// replaced, never changed in place, so a reader of Leases never races.
func (l *Lake) leaseTable(ctx context.Context, ls *Lease, ident string) error {
	unlock := l.lockTable(ident)
	defer unlock()
	tbl, err := l.load(ctx, ident)
	if errors.Is(err, ErrNoSuchTable) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lease %s: %w", ident, err)
	}
	snaps := make(map[string]int64, len(ls.Snapshots)+1)
	for k, v := range ls.Snapshots {
		snaps[k] = v
	}
	if s := tbl.CurrentSnapshot(); s != nil {
		snaps[ident] = s.SnapshotID
	} else {
		snaps[ident] = 0
	}
	ls.Snapshots = snaps
	l.leases.mu.Lock()
	defer l.leases.mu.Unlock()
	if l.leases.by == nil {
		l.leases.by = map[string]Lease{}
	}
	l.leases.by[ls.ID] = *ls
	return nil
}

// MaxLease bounds a lease, whatever a reader asks: what it holds back from
// expiry is bounded too. A reader that may run longer must not ask for
// one (query refuses a --timeout the lease cannot cover).
const MaxLease = 6 * time.Hour

// Release ends a lease (ErrNoLease when it has ended already).
func (l *Lake) Release(id string) error {
	l.leases.mu.Lock()
	defer l.leases.mu.Unlock()
	if _, ok := l.leases.by[id]; !ok {
		return ErrNoLease
	}
	delete(l.leases.by, id)
	return nil
}

// Leases returns the leases in force (ended ones are dropped).
func (l *Lake) Leases() []Lease {
	l.leases.mu.Lock()
	defer l.leases.mu.Unlock()
	now := time.Now()
	var out []Lease
	for id, ls := range l.leases.by {
		if now.After(ls.Until) {
			delete(l.leases.by, id)
			continue
		}
		out = append(out, ls)
	}
	return out
}

// leasedFrom returns how many of main's newest snapshots (ancestry, newest
// first) the leases in force on ident keep: up to and including the
// oldest leased one found (0: none).
func (l *Lake) leasedFrom(ident string, ancestry []icetable.Snapshot) int {
	keep := 0
	for _, ls := range l.Leases() {
		snap, ok := ls.Snapshots[ident]
		if !ok || snap == 0 {
			continue
		}
		for i, s := range ancestry {
			if s.SnapshotID == snap {
				keep = max(keep, i+1)
				break
			}
		}
	}
	return keep
}
