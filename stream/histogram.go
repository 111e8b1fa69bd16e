package stream

import (
	"math"
	"sort"
)

// LatencyBounds are the upper bounds, in seconds, of a Histogram's buckets
// (one more bucket holds everything above the last): fine below the
// appliance's one-second trigger, coarse up to an hour.
var LatencyBounds = []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3, 5, 7.5, 10, 15, 20, 30, 60, 120, 300, 600, 1800, 3600}

// Histogram counts durations (seconds) into LatencyBounds' buckets. The zero
// value is empty and ready to use.
type Histogram struct {
	Counts [26]uint64 // per bucket; Counts[i] holds values <= LatencyBounds[i] (and > the one before); the last, everything above
	Sum    float64    // of all observed values
}

// Observe adds one value.
func (h *Histogram) Observe(sec float64) {
	i := sort.SearchFloat64s(LatencyBounds, sec)
	h.Counts[i]++
	h.Sum += sec
}

// Add adds o's counts to h.
func (h *Histogram) Add(o *Histogram) {
	if o == nil {
		return
	}
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
	h.Sum += o.Sum
}

// Count returns the number of values observed.
func (h *Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile estimates the q-quantile (0 < q <= 1) by linear interpolation
// within its bucket; NaN when empty. Values above the last bound are
// reported as the last bound.
func (h *Histogram) Quantile(q float64) float64 {
	n := h.Count()
	if n == 0 {
		return math.NaN()
	}
	rank := q * float64(n)
	var seen float64
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		if seen+float64(c) >= rank {
			if i == len(LatencyBounds) {
				return LatencyBounds[i-1]
			}
			lo := 0.0
			if i > 0 {
				lo = LatencyBounds[i-1]
			}
			return lo + (LatencyBounds[i]-lo)*(rank-seen)/float64(c)
		}
		seen += float64(c)
	}
	return LatencyBounds[len(LatencyBounds)-1]
}
