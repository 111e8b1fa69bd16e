package verify

import (
	"slices"
	"testing"
)

// TestOffsetBits: marks, repeats, gaps and the highest offset, across word
// boundaries and outside the range.
func TestOffsetBits(t *testing.T) {
	b := newOffsetBits(130)
	for _, off := range []int64{0, 63, 64, 64, 127, 129, 129, 129} {
		b.add(off)
	}
	if in, _ := b.add(130); in {
		t.Fatal("offset 130 of [0, 130): want outside")
	}
	if in, _ := b.add(-1); in {
		t.Fatal("offset -1: want outside")
	}
	if got := b.distinct(); got != 5 {
		t.Errorf("distinct: got %d, want 5", got)
	}
	if got := b.high(); got != 129 {
		t.Errorf("high: got %d, want 129", got)
	}
	if got := newOffsetBits(10).high(); got != -1 {
		t.Errorf("high of nothing: got %d, want -1", got)
	}
	if got := b.repeated(maxListed); !slices.Equal(got, []int64{64, 129}) {
		t.Errorf("repeated: got %v, want [64 129]", got)
	}
	n, first := b.absent(60, 130, 3)
	if n != 66 || !slices.Equal(first, []int64{60, 61, 62}) {
		t.Errorf("absent in [60, 130): got %d %v, want 66 [60 61 62]", n, first)
	}
}

// TestIDSet: sortUniq reports repeats, minus merges.
func TestIDSet(t *testing.T) {
	s := idSet{5, 1, 3, 3, 9, 3, 1}
	rep, extra := s.sortUniq()
	if !slices.Equal(s, idSet{1, 3, 5, 9}) || !slices.Equal(rep, []uint64{1, 3}) || extra != 3 {
		t.Fatalf("sortUniq: got %v, repeated %v, %d extra rows; want [1 3 5 9], [1 3], 3", s, rep, extra)
	}
	n, first := s.minus(idSet{0, 3, 4, 9}, 1)
	if n != 2 || !slices.Equal(first, []uint64{1}) {
		t.Errorf("minus: got %d %v, want 2 [1]", n, first)
	}
	if !s.has(5) || s.has(4) {
		t.Errorf("has: got 5 %v, 4 %v; want true, false", s.has(5), s.has(4))
	}
}
