package verify

import (
	"hash/maphash"
	"slices"
)

// Event ids are compared as 64-bit hashes in sorted slices: 8 bytes an id
// where a map of id strings costs some 100 (a UUID string, its header and
// the map's own overhead). The few hashes a report lists are turned back
// into ids by a second, filtered scan.
//
// Two distinct ids share a hash with probability about n²/2⁶⁵: 3e-8 for a
// million ids, 3e-6 for ten million. A collision can only hide a
// difference (a missing id whose hash equals a silver id's, or a duplicate
// that is really two ids), never invent a loss; the seed is drawn per Run,
// so a collision does not repeat on the next run.

// idHasher hashes event ids with one seed.
type idHasher struct{ seed maphash.Seed }

func newIDHasher() idHasher { return idHasher{seed: maphash.MakeSeed()} }

func (h idHasher) sum(id string) uint64 { return maphash.String(h.seed, id) }

// idSet is a sorted slice of id hashes, built by appending and then sorted
// once.
type idSet []uint64

// sortUniq sorts s and removes repeats; it returns the hashes that were
// repeated (each once) and how many rows the repeats were.
func (s *idSet) sortUniq() (repeated []uint64, extraRows int64) {
	slices.Sort(*s)
	in := *s
	out := in[:0]
	for i, h := range in {
		if i > 0 && h == in[i-1] {
			extraRows++
			if len(repeated) == 0 || repeated[len(repeated)-1] != h {
				repeated = append(repeated, h)
			}
			continue
		}
		out = append(out, h)
	}
	*s = slices.Clip(out)
	return repeated, extraRows
}

// has reports whether the sorted set s holds h.
func (s idSet) has(h uint64) bool {
	_, ok := slices.BinarySearch(s, h)
	return ok
}

// minus returns how many hashes of the sorted set s are not in the sorted
// set o, and the first limit of them, by merging the two.
func (s idSet) minus(o idSet, limit int) (int64, []uint64) {
	var n int64
	var first []uint64
	j := 0
	for _, h := range s {
		for j < len(o) && o[j] < h {
			j++
		}
		if j < len(o) && o[j] == h {
			continue
		}
		n++
		if len(first) < limit {
			first = append(first, h)
		}
	}
	return n, first
}
