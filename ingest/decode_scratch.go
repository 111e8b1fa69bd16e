package ingest

// docScratch keeps the maps and slices of decoded documents for the next
// document (Contract.Check decodes one event, validates it and drops it).
// Events have one shape, so the n-th map of the next event is about as big
// as the n-th map of this one: reuse sizes it without growth steps. The
// profile showed map growth (mapassign) as most of the decoder's cost and
// its garbage as a large share of the GC work.
type docScratch struct {
	maps  []map[string]any
	nmaps int
	arrs  [][]any
	narrs int
	text  []byte // unquoted strings (with escapes) of the current document
}

// Limits on what a docScratch keeps between documents: an odd, huge
// document is decoded as usual but its big maps and slices are not kept.
const (
	scratchMaps   = 64
	scratchMapLen = 64
	scratchArrs   = 16
	scratchArrLen = 256
	scratchText   = 16 << 10
)

func newDocScratch() *docScratch {
	return &docScratch{text: make([]byte, 0, scratchText)}
}

func (s *docScratch) newMap() map[string]any {
	if s.nmaps < len(s.maps) {
		m := s.maps[s.nmaps]
		s.nmaps++
		return m // cleared by release
	}
	m := make(map[string]any, 8)
	if len(s.maps) < scratchMaps {
		s.maps = append(s.maps, m)
		s.nmaps++
	}
	return m
}

// newArr returns an empty slice and its slot (-1: not kept); the caller
// stores the filled slice back with keepArr.
func (s *docScratch) newArr() (int, []any) {
	if s.narrs < len(s.arrs) {
		s.narrs++
		return s.narrs - 1, s.arrs[s.narrs-1][:0]
	}
	a := make([]any, 0, 4)
	if len(s.arrs) < scratchArrs {
		s.arrs = append(s.arrs, a)
		s.narrs++
		return s.narrs - 1, a
	}
	return -1, a
}

func (s *docScratch) keepArr(slot int, a []any) {
	if slot >= 0 {
		s.arrs[slot] = a
	}
}

// release empties everything the last document used, dropping references
// into its bytes.
func (s *docScratch) release() {
	for i, m := range s.maps[:s.nmaps] {
		if len(m) > scratchMapLen {
			s.maps[i] = make(map[string]any, 8)
			continue
		}
		clear(m)
	}
	s.nmaps = 0
	for i, a := range s.arrs[:s.narrs] {
		if cap(a) > scratchArrLen {
			s.arrs[i] = make([]any, 0, 4)
			continue
		}
		clear(a)
		s.arrs[i] = a[:0]
	}
	s.narrs = 0
	s.text = s.text[:0]
}
