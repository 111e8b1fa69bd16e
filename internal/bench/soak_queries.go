package bench

import (
	"lakehouse/internal/observe"
	"slices"
	"strings"
)

// SoakQuerySummary is one query's batch costs, first half against second:
// flat when the cost per batch does not grow with the batches so far.
type SoakQuerySummary struct {
	Query            string  `json:"query"`
	FirstBatches     int64   `json:"first_half_batches"`
	SecondBatches    int64   `json:"second_half_batches"`
	FirstBatchMean   float64 `json:"first_half_batch_ms"`
	SecondBatchMean  float64 `json:"second_half_batch_ms"`
	FirstCommitMean  float64 `json:"first_half_commit_ms"`
	SecondCommitMean float64 `json:"second_half_commit_ms"`
}

// querySummaries compares each query's mean batch and commit durations
// between the halves of the feeding, from the running sums the samples
// carry (the first sample that has them to the last one at or before half,
// and from there to the last).
func querySummaries(feeding []SoakSample, half float64) []SoakQuerySummary {
	var start, mid, end SoakSample
	found := false
	for _, s := range feeding {
		if !s.StatusOK || s.Batches == nil {
			continue
		}
		if !found {
			start, found = s, true
		}
		if s.Elapsed <= half {
			mid = s
		}
		end = s
	}
	if !found || mid.Batches == nil {
		return nil
	}
	mean := func(a, b observe.QueryStatus, sum func(observe.QueryStatus) float64) float64 {
		if n := b.Batches - a.Batches; n > 0 {
			return (sum(b) - sum(a)) / float64(n) * 1000
		}
		return 0
	}
	batch := func(q observe.QueryStatus) float64 { return q.BatchSeconds }
	commit := func(q observe.QueryStatus) float64 { return q.CommitSeconds }
	var out []SoakQuerySummary
	for name, e := range end.Batches {
		a, m := start.Batches[name], mid.Batches[name]
		out = append(out, SoakQuerySummary{Query: name,
			FirstBatches: m.Batches - a.Batches, SecondBatches: e.Batches - m.Batches,
			FirstBatchMean: mean(a, m, batch), SecondBatchMean: mean(m, e, batch),
			FirstCommitMean: mean(a, m, commit), SecondCommitMean: mean(m, e, commit)})
	}
	slices.SortFunc(out, func(a, b SoakQuerySummary) int { return strings.Compare(a.Query, b.Query) })
	return out
}
