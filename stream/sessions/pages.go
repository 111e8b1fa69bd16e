package sessions

import (
	"crypto/sha256"
	"encoding/binary"
	"iter"
	"maps"
	"slices"
)

// pageID stands for a page title in the state: the first 8 bytes of the
// title's SHA-256, big endian. A session counts distinct titles, so the
// state keeps 8 bytes per page instead of the title; two titles of one
// session would have to collide in 64 bits of SHA-256 to be counted once
// (about 1 in 10^10 for a session of 10^5 pages, and impractical to craft).
// State files store ids, so the function must never change.
type pageID uint64

func pageOf(title string) pageID {
	var buf [256]byte // on the stack: no allocation for titles up to 256 bytes (Wikimedia's limit is 255)
	sum := sha256.Sum256(append(buf[:0], title...))
	return pageID(binary.BigEndian.Uint64(sum[:8]))
}

// smallPages is how many ids a pageSet keeps in a slice before it moves
// them to a map: most sessions have a few pages, and a slice of a few ids
// is a fraction of an empty map's size.
const smallPages = 16

// pageSet is a set of page ids; the zero value is empty.
type pageSet struct {
	small []pageID            // while len ≤ smallPages, unordered
	big   map[pageID]struct{} // beyond, and small is nil
}

// add puts id into the set and reports whether it was new.
func (p *pageSet) add(id pageID) bool {
	if p.big != nil {
		if _, ok := p.big[id]; ok {
			return false
		}
		p.big[id] = struct{}{}
		return true
	}
	if slices.Contains(p.small, id) {
		return false
	}
	if len(p.small) < smallPages {
		p.small = append(p.small, id)
		return true
	}
	p.big = make(map[pageID]struct{}, 2*smallPages)
	for _, x := range p.small {
		p.big[x] = struct{}{}
	}
	p.small = nil
	p.big[id] = struct{}{}
	return true
}

func (p *pageSet) len() int {
	if p.big != nil {
		return len(p.big)
	}
	return len(p.small)
}

// all yields the ids in no particular order.
func (p *pageSet) all() iter.Seq[pageID] {
	if p.big != nil {
		return maps.Keys(p.big)
	}
	return slices.Values(p.small)
}
