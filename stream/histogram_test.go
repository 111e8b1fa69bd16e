package stream

import (
	"math"
	"testing"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	if !math.IsNaN(h.Quantile(0.5)) {
		t.Errorf("empty histogram: got a quantile, want NaN")
	}
	for i := 0; i < 100; i++ {
		h.Observe(0.8) // the (0.75, 1] bucket
	}
	h.Observe(4000) // above every bound
	if got := h.Count(); got != 101 {
		t.Fatalf("count: got %d, want 101", got)
	}
	if q := h.Quantile(0.5); q <= 0.75 || q > 1 {
		t.Errorf("p50: got %v, want in (0.75, 1]", q)
	}
	if q := h.Quantile(1); q != LatencyBounds[len(LatencyBounds)-1] {
		t.Errorf("p100: got %v, want the last bound", q)
	}
	var sum Histogram
	sum.Add(&h)
	sum.Add(&h)
	sum.Add(nil)
	if sum.Count() != 202 || sum.Sum != 2*h.Sum {
		t.Errorf("sum of two: got %d values, sum %v", sum.Count(), sum.Sum)
	}
	if len(h.Counts) != len(LatencyBounds)+1 {
		t.Errorf("buckets: %d counts for %d bounds", len(h.Counts), len(LatencyBounds))
	}
}
